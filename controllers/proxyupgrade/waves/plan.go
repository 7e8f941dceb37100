package waves

import (
	"fmt"
	"slices"
	"strings"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// Plan splits namespaces into waves: wave 0 holds the canary namespaces that are among namespaces,
// then the others follow sorted by name, WaveSize(w, others) at a time. It returns no waves for no
// namespaces and never an empty wave.
func Plan(namespaces, canaries []string, w sluicev1.ProxyUpgradeWaves) [][]string {
	selected := map[string]bool{}
	for _, ns := range namespaces {
		selected[ns] = true
	}
	var canaryWave []string
	isCanary := map[string]bool{}
	for _, ns := range canaries {
		if selected[ns] && !isCanary[ns] {
			canaryWave = append(canaryWave, ns)
			isCanary[ns] = true
		}
	}
	slices.Sort(canaryWave)
	var rest []string
	for ns := range selected {
		if !isCanary[ns] {
			rest = append(rest, ns)
		}
	}
	slices.Sort(rest)
	var out [][]string
	if len(canaryWave) > 0 {
		out = append(out, canaryWave)
	}
	size := WaveSize(w, len(rest))
	for len(rest) > 0 {
		n := min(size, len(rest))
		out = append(out, rest[:n:n])
		rest = rest[n:]
	}
	return out
}

// WaveSize is the number of namespaces per fleet wave for a fleet of n non-canary namespaces:
// maxNamespaces, or percent of n rounded up, at least 1. Default 1.
func WaveSize(w sluicev1.ProxyUpgradeWaves, n int) int {
	switch {
	case w.MaxNamespaces != nil && *w.MaxNamespaces > 0:
		return int(*w.MaxNamespaces)
	case w.Percent != nil && *w.Percent > 0:
		return max(1, (n*int(*w.Percent)+99)/100)
	}
	return 1
}

// plan starts a run towards target: the waves, each namespace's previous version, phase Pending.
func (d *Decision) plan(o Observed, target string) {
	s := &d.Status
	var names []string
	for _, ns := range o.Namespaces {
		names = append(names, ns.Name)
	}
	planned := Plan(names, o.Spec.CanaryNamespaces, o.Spec.Waves)
	*s = sluicev1.ProxyUpgradeStatus{ObservedGeneration: s.ObservedGeneration, Conditions: s.Conditions,
		Phase: s.Phase, LastTransitionTime: s.LastTransitionTime, Target: target}
	for _, nss := range planned {
		s.Waves = append(s.Waves, sluicev1.ProxyUpgradeWave{Namespaces: nss, Phase: sluicev1.WavePending, Previous: previous(o, nss, target)})
	}
	d.setPhase(sluicev1.ProxyUpgradePending, o.Now)
	if len(planned) == 0 {
		d.normal("Planned", "No namespace selected yet: nothing to move to %s", target)
		return
	}
	var sizes []string
	for _, w := range planned {
		sizes = append(sizes, fmt.Sprint(len(w)))
	}
	nsWord := "namespaces"
	if len(names) == 1 {
		nsWord = "namespace"
	}
	d.normal("Planned", "Planned %s (%s %s) to move the %s data plane to %s",
		plural(len(planned), "wave"), strings.Join(sizes, "+"), nsWord, o.Spec.Mesh, target)
}

// previous returns the version each namespace runs before its wave: for Linkerd the most common
// version of its meshed pods other than target (else its pin, unless that is the target), for
// Istio spec.istio.previousRevision. Namespaces without one are left out.
func previous(o Observed, namespaces []string, target string) map[string]string {
	out := map[string]string{}
	for _, name := range namespaces {
		if o.Spec.Mesh == sluicev1.MeshIstio {
			if o.Spec.Istio != nil {
				out[name] = o.Spec.Istio.PreviousRevision
			}
			continue
		}
		ns := o.namespace(name)
		if ns == nil {
			continue
		}
		counts := map[string]int{}
		for _, w := range ns.Workloads {
			for _, p := range w.Pods {
				if p.Version != "" && p.Version != target {
					counts[p.Version]++
				}
			}
		}
		best := ""
		for v, n := range counts {
			if best == "" || n > counts[best] || (n == counts[best] && v < best) {
				best = v
			}
		}
		if best == "" && ns.Pin != target {
			best = ns.Pin
		}
		if best != "" {
			out[name] = best
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// addNamespaces puts namespaces that appeared since the plan into the last wave while it is
// pending and not the canary wave and has room, else into a new wave.
func (d *Decision) addNamespaces(o Observed) {
	s := &d.Status
	planned := map[string]bool{}
	fleet := 0
	for i, w := range s.Waves {
		for _, ns := range w.Namespaces {
			planned[ns] = true
			if !(i == 0 && isCanaryWave(o.Spec, s)) {
				fleet++
			}
		}
	}
	var fresh []string
	for _, ns := range o.Namespaces {
		if !planned[ns.Name] {
			fresh = append(fresh, ns.Name)
		}
	}
	if len(fresh) == 0 {
		return
	}
	size := WaveSize(o.Spec.Waves, fleet+len(fresh))
	target := s.Target
	for _, ns := range fresh {
		last := len(s.Waves) - 1
		if last < 0 || s.Waves[last].Phase != sluicev1.WavePending || (last == 0 && isCanaryWave(o.Spec, s)) ||
			len(s.Waves[last].Namespaces) >= size {
			s.Waves = append(s.Waves, sluicev1.ProxyUpgradeWave{Phase: sluicev1.WavePending})
			last++
		}
		w := &s.Waves[last]
		w.Namespaces = append(w.Namespaces, ns)
		for k, v := range previous(o, []string{ns}, target) {
			if w.Previous == nil {
				w.Previous = map[string]string{}
			}
			w.Previous[k] = v
		}
		d.normal("NamespaceAdded", "Namespace %s appeared after the plan: added to wave %d", ns, last)
	}
}

// isCanaryWave reports whether wave 0 is the canary wave.
func isCanaryWave(spec sluicev1.ProxyUpgradeSpec, s *sluicev1.ProxyUpgradeStatus) bool {
	if len(spec.CanaryNamespaces) == 0 || len(s.Waves) == 0 {
		return false
	}
	for _, ns := range s.Waves[0].Namespaces {
		if slices.Contains(spec.CanaryNamespaces, ns) {
			return true
		}
	}
	return false
}
