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
func Plan(namespaces, canaries []string, w sluicev1.DataPlaneWaves) [][]string {
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
func WaveSize(w sluicev1.DataPlaneWaves, n int) int {
	switch {
	case w.MaxNamespaces != nil && *w.MaxNamespaces > 0:
		return int(*w.MaxNamespaces)
	case w.Percent != nil && *w.Percent > 0:
		return max(1, (n*int(*w.Percent)+99)/100)
	}
	return 1
}

// plan starts a run towards target: the waves, each namespace's previous version, phase
// Pending. What outlives runs is kept: the converged versions, the conditions, the handled
// requests (the request annotations present now count as handled, so a leftover approval or
// abort never acts on the new run).
func (d *Decision) plan(o Observed, target string) {
	s := &d.Status
	names := make([]string, 0, len(o.Namespaces))
	for _, ns := range o.Namespaces {
		names = append(names, ns.Name)
	}
	handled := map[string]string{}
	for k, v := range s.LastHandledRequests {
		handled[k] = v
	}
	for k, v := range o.Requests {
		if v != "" {
			handled[k] = v
		}
	}
	if len(handled) == 0 {
		handled = nil
	}
	*s = sluicev1.DataPlaneStatus{ObservedGeneration: s.ObservedGeneration, Conditions: s.Conditions,
		Phase: s.Phase, LastTransitionTime: s.LastTransitionTime, Version: target,
		ConvergedVersion: s.ConvergedVersion, PreviousVersion: s.PreviousVersion, ControlPlane: s.ControlPlane,
		LastHandledRequests: handled, Pins: s.Pins}
	if s.ConvergedVersion == "" {
		s.ConvergedVersion = uniformVersion(o)
	}
	s.Rollback = target != "" && o.Status.Version != "" && (target == s.ConvergedVersion || target == s.PreviousVersion)
	var planned [][]string
	if immediate(o.Spec, s) {
		if len(names) > 0 {
			planned = [][]string{names}
		}
	} else {
		planned = Plan(names, o.Spec.CanaryNamespaces, o.Spec.Waves)
	}
	for _, nss := range planned {
		s.Waves = append(s.Waves, sluicev1.DataPlaneWave{Namespaces: nss, Phase: sluicev1.WavePending, Previous: previous(o, nss, target)})
	}
	d.setPhase(sluicev1.DataPlanePending, o.Now)
	kind := "move"
	if s.Rollback {
		kind = fmt.Sprintf("roll back (%s)", o.Spec.Rollback)
		if o.Spec.Rollback == "" {
			kind = "roll back"
		}
	}
	if len(planned) == 0 {
		d.normal(sluicev1.ReasonPlanned, "No namespace selected yet: nothing to %s to %s", kind, target)
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
	d.normal(sluicev1.ReasonPlanned, "Planned %s (%s %s) to %s the %s data plane to %s",
		plural(len(planned), "wave"), strings.Join(sizes, "+"), nsWord, kind, o.Spec.Mesh, target)
}

// previous returns the version each namespace runs before its wave: the most common version of
// its meshed pods other than target, else its pin unless that is the target. Namespaces without
// one are left out (a rollback leaves them as they are).
func previous(o Observed, namespaces []string, target string) map[string]string {
	out := map[string]string{}
	for _, name := range namespaces {
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
		for _, p := range ns.Unmanaged {
			if p.Version != "" && p.Version != target {
				counts[p.Version]++
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
//
// After convergence a new namespace joins the last (succeeded) wave: it is watched for drift like
// the others, and drift handling moves it if it runs another version.
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
	target := s.Version
	for _, ns := range fresh {
		last := len(s.Waves) - 1
		converged := isConverged(s.Phase)
		if !converged && (last < 0 || s.Waves[last].Phase != sluicev1.WavePending || (last == 0 && isCanaryWave(o.Spec, s)) ||
			len(s.Waves[last].Namespaces) >= size) {
			s.Waves = append(s.Waves, sluicev1.DataPlaneWave{Phase: sluicev1.WavePending})
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
		if last < 0 {
			continue // a converged run always has a wave
		}
		d.normal(sluicev1.ReasonNamespaceAdded, "Namespace %s appeared after the plan: added to wave %d", ns, last)
	}
}

// isCanaryWave reports whether wave 0 is the canary wave.
func isCanaryWave(spec sluicev1.DataPlaneSpec, s *sluicev1.DataPlaneStatus) bool {
	if len(spec.CanaryNamespaces) == 0 || len(s.Waves) == 0 || immediate(spec, s) {
		return false
	}
	for _, ns := range s.Waves[0].Namespaces {
		if slices.Contains(spec.CanaryNamespaces, ns) {
			return true
		}
	}
	return false
}

// uniformVersion returns the version every meshed pod of the observed namespaces runs, or "" when
// they run several (or none): a fleet that ran one version before the first run had converged on
// it, so setting the version back to it is a rollback.
func uniformVersion(o Observed) string {
	v := ""
	for _, ns := range o.Namespaces {
		for _, wl := range ns.Workloads {
			for _, p := range wl.Pods {
				if p.Version == "" || (v != "" && p.Version != v) {
					return ""
				}
				v = p.Version
			}
		}
	}
	return v
}
