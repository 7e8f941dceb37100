package waves

import (
	"slices"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// count sets desired and current for every wave and the fleet, and lists the unmanaged pods on
// another version and the pods without the proxy. Desired counts, for every workload running the
// proxy, its desired replicas (so surge pods and pods being replaced never make it flicker), plus
// every unmanaged meshed pod; current how many of those run the declared version.
func (d *Decision) count(o Observed) {
	s := &d.Status
	s.Desired, s.Current = 0, 0
	s.UnmanagedPods, s.UnmeshedPods = nil, nil
	// A drift wave (driftPolicy Restart) moves namespaces an earlier wave planned again: the fleet
	// counts and names every namespace's pods once.
	seen := map[string]bool{}
	for i := range s.Waves {
		w := &s.Waves[i]
		w.Desired, w.Current = 0, 0
		for _, name := range w.Namespaces {
			ns := o.namespace(name)
			if ns == nil {
				continue
			}
			desired, current := countNamespace(ns, s.Version)
			w.Desired += desired
			w.Current += current
			if seen[name] {
				continue
			}
			seen[name] = true
			s.Desired += desired
			s.Current += current
			for _, p := range ns.Unmanaged {
				if p.Version != s.Version {
					s.UnmanagedPods = append(s.UnmanagedPods, name+"/"+p.Name)
				}
			}
			for _, p := range ns.Unmeshed {
				s.UnmeshedPods = append(s.UnmeshedPods, name+"/"+p)
			}
		}
	}
	s.UnmanagedPods = capped50(s.UnmanagedPods)
	s.UnmeshedPods = capped50(s.UnmeshedPods)
}

// countNamespace returns the desired and current meshed pods of ns for version v.
func countNamespace(ns *Namespace, v string) (desired, current int32) {
	for k := range ns.Workloads {
		wl := &ns.Workloads[k]
		desired += wl.desired()
		current += wl.current(v)
	}
	for _, p := range ns.Unmanaged {
		desired++
		if p.Version == v {
			current++
		}
	}
	return desired, current
}

// namespacePhase maps a wave's phase to its namespaces' status.
var namespacePhase = map[sluicev1.WavePhase]sluicev1.NamespacePhase{
	sluicev1.WavePending:     sluicev1.NamespacePending,
	sluicev1.WaveRestarting:  sluicev1.NamespaceRestarting,
	sluicev1.WaveBaking:      sluicev1.NamespaceBaking,
	sluicev1.WaveSucceeded:   sluicev1.NamespaceUpToDate,
	sluicev1.WaveRollingBack: sluicev1.NamespaceRollingBack,
	sluicev1.WaveRolledBack:  sluicev1.NamespaceRolledBack,
	sluicev1.WaveFailed:      sluicev1.NamespaceFailed,
}

// rows derives one row per planned namespace: its wave (the last one it is in), counts and
// status, with the reason when it is not where its wave wants it.
func (d *Decision) rows(o Observed) {
	s := &d.Status
	byName := map[string]int{}
	var rows []sluicev1.DataPlaneNamespace
	for i, w := range s.Waves {
		for _, name := range w.Namespaces {
			row := sluicev1.DataPlaneNamespace{Namespace: name, Wave: int32(i), Status: namespacePhase[w.Phase]}
			if ns := o.namespace(name); ns != nil {
				row.Desired, row.Current = countNamespace(ns, s.Version)
				row.RevisionTag = ns.RevisionTag
				switch {
				case len(ns.Unmeshed) > 0:
					row.Reason = sluicev1.ReasonUnmeshedPods
				case hasStaleUnmanaged(ns, s.Version):
					row.Reason = sluicev1.ReasonUnmanagedPods
				case ns.RevisionTag != "":
					row.Reason = sluicev1.ReasonRevisionTag
				}
				if w.Phase == sluicev1.WaveSucceeded && (row.Current < row.Desired || len(ns.Unmeshed) > 0) {
					row.Status, row.Reason = sluicev1.NamespaceDrifted, sluicev1.ReasonDrifted
				}
			}
			if (w.Phase == sluicev1.WaveRolledBack || w.Phase == sluicev1.WaveFailed) && row.Reason == "" {
				row.Reason = w.Reason
			}
			if j, ok := byName[name]; ok {
				rows[j] = row // a drift wave moves the namespace again
				continue
			}
			byName[name] = len(rows)
			rows = append(rows, row)
		}
	}
	slices.SortFunc(rows, func(a, b sluicev1.DataPlaneNamespace) int {
		if a.Wave != b.Wave {
			return int(a.Wave - b.Wave)
		}
		if a.Namespace < b.Namespace {
			return -1
		}
		return 1
	})
	s.Namespaces = rows
}

// applyBlockers marks the rows of namespaces whose wave is blocked in this tick.
func (d *Decision) applyBlockers() {
	for _, b := range d.Blockers {
		for i := range d.Status.Namespaces {
			r := &d.Status.Namespaces[i]
			if r.Namespace == b.Namespace && (r.Status == sluicev1.NamespaceRestarting || r.Status == sluicev1.NamespaceRollingBack) {
				r.Status, r.Reason = sluicev1.NamespaceBlocked, b.Reason
			}
		}
	}
}

func hasStaleUnmanaged(ns *Namespace, v string) bool {
	for _, p := range ns.Unmanaged {
		if p.Version != v {
			return true
		}
	}
	return false
}
