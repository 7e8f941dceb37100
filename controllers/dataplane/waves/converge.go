package waves

import (
	"fmt"
	"strings"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// converge handles a run whose waves all succeeded. The data plane is UpToDate only when every
// meshed pod runs the declared version: pods Sluice cannot restart that run another version make
// it Incomplete (named in status.unmanagedPods), and after convergence any pod that comes back on
// another version or without the proxy makes it Drifted (named in status.driftedPods, one event
// and one notification per drift). With driftPolicy Restart a new wave moves the drifted
// namespaces back, the same way as any wave. It returns no actions: a drift wave acts from the
// next tick on.
func (d *Decision) converge(o Observed) []Action {
	s := &d.Status
	d.requeue(IdleResync)
	drifted := d.driftedPods(o)
	stale := s.UnmanagedPods
	switch s.Phase {
	case sluicev1.DataPlaneUpToDate:
		if len(drifted)+len(stale) > 0 {
			d.drift(o, drifted, stale)
		}
	case sluicev1.DataPlaneDrifted:
		switch {
		case len(drifted)+len(stale) == 0:
			d.upToDate(o, "Drift resolved: ")
		case o.Spec.DriftPolicy == sluicev1.DriftRestart && len(drifted) > 0:
			d.repairWave(o)
		default:
			s.DriftedPods = capped50(append(drifted, stale...))
		}
	default: // the last wave just succeeded, or the run was Incomplete
		switch {
		case len(drifted) > 0:
			d.drift(o, drifted, stale)
		case len(stale) > 0:
			if s.Phase != sluicev1.DataPlaneIncomplete {
				d.setPhase(sluicev1.DataPlaneIncomplete, o.Now)
				d.warning(sluicev1.ReasonUnmanagedPods, "Every wave succeeded, but %d meshed pods Sluice cannot restart still run another version than %s: %s (recreate them, or exclude them with spec.excludePods or the annotation %s=true)",
					len(stale), s.Version, strings.Join(capped(stale, 5), ", "), sluicev1.AnnotationDataPlaneExclude)
			}
		default:
			d.upToDate(o, "")
		}
	}
	return nil
}

// upToDate records convergence on the declared version.
func (d *Decision) upToDate(o Observed, prefix string) {
	s := &d.Status
	s.DriftedPods, s.DriftDetectedAt = nil, nil
	if s.ConvergedVersion != s.Version {
		s.PreviousVersion, s.ConvergedVersion = s.ConvergedVersion, s.Version
	}
	d.setPhase(sluicev1.DataPlaneUpToDate, o.Now)
	d.normal(sluicev1.ReasonUpToDate, "%sall %d meshed pods run %s (%s)", prefix, s.Desired, s.Version, plural(len(s.Waves), "wave"))
	if prefix == "" {
		d.notify("UpToDate", sluicev1.SeverityInfo, fmt.Sprintf("Data plane up to date: %d of %d meshed pods run %s (%s)",
			s.Current, s.Desired, s.Version, plural(len(s.Waves), "wave")))
	}
}

// drift records that pods left the declared version after convergence: the Drifted phase, one
// warning event and one notification for this drift.
func (d *Decision) drift(o Observed, drifted, stale []string) {
	s := &d.Status
	all := append(append([]string(nil), drifted...), stale...)
	s.DriftedPods = capped50(all)
	s.DriftDetectedAt = stamp(o.Now)
	d.setPhase(sluicev1.DataPlaneDrifted, o.Now)
	msg := fmt.Sprintf("%d pods left %s after convergence: %s", len(all), s.Version, strings.Join(capped(all, 5), ", "))
	d.warning(sluicev1.ReasonDrifted, "%s", msg)
	d.notifyKeyed(s.Version+"/Drifted/"+token(s.DriftDetectedAt), "Drifted", sluicev1.SeverityWarn, "Data plane drifted: "+msg)
	if o.Spec.DriftPolicy == sluicev1.DriftRestart && len(drifted) > 0 {
		d.repairWave(o)
	}
}

// repairWave appends a wave moving the namespaces with drifted pods back to the declared version
// (driftPolicy Restart). Its rollback leaves the namespaces as they are.
func (d *Decision) repairWave(o Observed) {
	s := &d.Status
	var nss []string
	for _, ns := range o.Namespaces {
		if !d.planned(ns.Name) {
			continue
		}
		if len(ns.Unmeshed) > 0 || staleIn(&ns, s.Version) {
			nss = append(nss, ns.Name)
		}
	}
	if len(nss) == 0 {
		return
	}
	s.Waves = append(s.Waves, sluicev1.DataPlaneWave{Namespaces: nss, Phase: sluicev1.WavePending})
	d.setPhase(sluicev1.DataPlaneProgressing, o.Now)
	d.normal(sluicev1.ReasonDriftRestarting, "driftPolicy Restart: wave %d moves %s back to %s", len(s.Waves)-1,
		strings.Join(nss, ", "), s.Version)
	d.requeue(o.PollInterval)
}

// driftedPods names the pods of planned namespaces that are not on the declared version: managed
// meshed pods on another version and pods that should run the proxy and do not.
func (d *Decision) driftedPods(o Observed) []string {
	var out []string
	for _, ns := range o.Namespaces {
		if !d.planned(ns.Name) {
			continue
		}
		for _, wl := range ns.Workloads {
			for _, p := range wl.Pods {
				if p.Version != d.Status.Version {
					out = append(out, ns.Name+"/"+p.Name)
				}
			}
		}
		for _, p := range ns.Unmeshed {
			out = append(out, ns.Name+"/"+p)
		}
	}
	return out
}

func staleIn(ns *Namespace, v string) bool {
	for _, wl := range ns.Workloads {
		if len(wl.stale(v)) > 0 {
			return true
		}
	}
	return false
}

// staleWave reports whether a managed meshed pod of the namespaces runs another version than v
// (unmanaged pods cannot be restarted and do not hold a wave).
func staleWave(o Observed, names []string, v string) bool {
	for _, name := range names {
		if ns := o.namespace(name); ns != nil && staleIn(ns, v) {
			return true
		}
	}
	return false
}

func unmeshedIn(o Observed, names []string) []string {
	var out []string
	for _, name := range names {
		if ns := o.namespace(name); ns != nil {
			for _, p := range ns.Unmeshed {
				out = append(out, name+"/"+p)
			}
		}
	}
	return out
}

func (d *Decision) planned(ns string) bool {
	for _, w := range d.Status.Waves {
		for _, n := range w.Namespaces {
			if n == ns {
				return true
			}
		}
	}
	return false
}

// maxListed bounds the pod lists in status.
const maxListed = 50

func capped50(items []string) []string {
	if len(items) <= maxListed {
		return items
	}
	return items[:maxListed]
}
