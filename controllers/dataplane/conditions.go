package dataplane

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/dataplane/waves"
	"sluice.dev/sluice/controllers/internal/planevent"
	"sluice.dev/sluice/controllers/internal/reconcilekit"
)

// setAbnormal sets the abnormal-true condition typ when msg is not empty and removes it
// otherwise; it reports whether it became True or its message changed.
func setAbnormal(dp *sluicev1.DataPlane, typ, reason, msg string) bool {
	if msg == "" {
		reconcilekit.RemoveCondition(dp, typ)
		return false
	}
	prev := reconcilekit.FindCondition(dp, typ)
	reconcilekit.SetCondition(dp, typ, metav1.ConditionTrue, reason, msg)
	return prev == nil || prev.Message != msg
}

// setConditions derives the conditions from the status and this tick's decision: Ready (True
// only when UpToDate; False with the root cause when RolledBack, Failed, Incomplete or Drifted;
// Unknown while a run is in flight), Reconciling while a run is in flight, and the abnormal-true
// ControlPlaneNotReady, Blocked, UnmanagedPods, Drifted and NamespacesSkipped. A Blocked
// condition that appears or changes is also a warning event, which it returns.
func setConditions(dp *sluicev1.DataPlane, d *waves.Decision) []planevent.Event {
	s := &dp.Status
	reason, msg := readiness(s, d.Hold)
	summary := reconcilekit.Summary{Ready: metav1.ConditionUnknown, Reason: reason, Message: msg, Reconciling: true}
	switch s.Phase {
	case sluicev1.DataPlaneUpToDate:
		summary.Ready, summary.Reconciling = metav1.ConditionTrue, false
	case sluicev1.DataPlaneRolledBack, sluicev1.DataPlaneFailed, sluicev1.DataPlaneIncomplete, sluicev1.DataPlaneDrifted:
		summary.Ready, summary.Reconciling = metav1.ConditionFalse, false
	}
	reconcilekit.SetSummary(dp, summary)

	cpMsg := ""
	if !s.ControlPlane.Ready {
		cpMsg = fmt.Sprintf("%s (control plane seen at %s)", s.ControlPlane.Message, orUnknown(s.ControlPlane.Version))
	}
	setAbnormal(dp, sluicev1.ConditionControlPlaneNotReady, sluicev1.ReasonControlPlaneNotReady, cpMsg)

	blocked, blockReason := "", ""
	if len(d.Blockers) > 0 {
		var parts []string
		for _, b := range d.Blockers {
			parts = append(parts, b.Message)
		}
		blocked, blockReason = strings.Join(capped(parts, 6), "; "), d.Blockers[0].Reason
	}
	var events []planevent.Event
	if setAbnormal(dp, sluicev1.ConditionBlocked, blockReason, blocked) {
		events = append(events, planevent.Warning(blockReason, "Wave blocked: "+blocked))
	}

	unmanaged := ""
	if n := len(s.UnmanagedPods); n > 0 {
		unmanaged = fmt.Sprintf("%d meshed pods Sluice cannot restart run another version than %s: %s (recreate them, or exclude them with spec.excludePods or the annotation %s=true)",
			n, s.Version, strings.Join(capped(s.UnmanagedPods, 10), ", "), sluicev1.AnnotationDataPlaneExclude)
	}
	setAbnormal(dp, sluicev1.ConditionUnmanagedPods, sluicev1.ReasonUnmanagedPods, unmanaged)

	drifted := ""
	if s.Phase == sluicev1.DataPlaneDrifted {
		drifted = fmt.Sprintf("%d pods left %s after convergence (another version or no proxy): %s", len(s.DriftedPods), s.Version,
			strings.Join(capped(s.DriftedPods, 10), ", "))
	}
	setAbnormal(dp, sluicev1.ConditionDrifted, sluicev1.ReasonDrifted, drifted)

	skipped, skipReason := "", ""
	if len(s.Skipped) > 0 {
		var parts []string
		for _, sk := range s.Skipped {
			parts = append(parts, sk.Message)
		}
		skipped, skipReason = strings.Join(parts, "; "), s.Skipped[0].Reason
	}
	setAbnormal(dp, sluicev1.ConditionNamespacesSkipped, skipReason, skipped)
	return events
}

// readiness is the reason and message of the Ready condition: where the run is, or, once it
// ended, why it is not up to date (the root cause of a failure is kept on its wave).
func readiness(s *sluicev1.DataPlaneStatus, hold *waves.Hold) (reason, msg string) {
	switch s.Phase {
	case sluicev1.DataPlaneUpToDate:
		return sluicev1.ReasonUpToDate, fmt.Sprintf("%d of %d meshed pods run %s", s.Current, s.Desired, s.Version)
	case sluicev1.DataPlaneIncomplete:
		return sluicev1.ReasonUnmanagedPods, fmt.Sprintf("Every wave succeeded; %d of %d meshed pods run %s; pods Sluice cannot restart run another version: %s",
			s.Current, s.Desired, s.Version, strings.Join(capped(s.UnmanagedPods, 10), ", "))
	case sluicev1.DataPlaneDrifted:
		return sluicev1.ReasonDrifted, fmt.Sprintf("%d of %d meshed pods run %s; drifted: %s", s.Current, s.Desired, s.Version,
			strings.Join(capped(s.DriftedPods, 10), ", "))
	case sluicev1.DataPlaneRolledBack, sluicev1.DataPlaneFailed:
		w := currentWave(s)
		if w == nil {
			return string(s.Phase), fmt.Sprintf("The run to %s ended %s", s.Version, s.Phase)
		}
		what := "was rolled back"
		if w.Phase == sluicev1.WaveFailed {
			what = "failed"
		}
		return w.Reason, fmt.Sprintf("Wave %d (%s) %s; later waves did not start: %s", s.CurrentWave, strings.Join(w.Namespaces, ", "), what, w.Message)
	}
	if hold != nil {
		return hold.Reason, hold.Message
	}
	w := currentWave(s)
	if w == nil {
		return sluicev1.ReasonProgressing, fmt.Sprintf("Planning the move to %s", s.Version)
	}
	where := fmt.Sprintf("Wave %d of %d (%s)", s.CurrentWave, len(s.Waves)-1, strings.Join(w.Namespaces, ", "))
	switch w.Phase {
	case sluicev1.WaveRestarting:
		return sluicev1.ReasonWaveRestarting, fmt.Sprintf("%s restarting: %d of %d meshed pods on %s", where, w.Current, w.Desired, s.Version)
	case sluicev1.WaveBaking:
		return sluicev1.ReasonWaveBaking, fmt.Sprintf("%s baking on %s since %s, %d failed checks", where, s.Version,
			w.BakeStartedAt.UTC().Format(time.RFC3339), w.FailedChecks)
	case sluicev1.WaveRollingBack:
		return sluicev1.ReasonWaveRollingBack, fmt.Sprintf("%s rolling back (%s: %s): %d of %d meshed pods still on %s", where,
			w.Reason, w.Message, w.Current, w.Desired, s.Version)
	}
	return sluicev1.ReasonProgressing, fmt.Sprintf("%s: %s", where, w.Phase)
}

func currentWave(s *sluicev1.DataPlaneStatus) *sluicev1.DataPlaneWave {
	if int(s.CurrentWave) < len(s.Waves) && s.Waves[s.CurrentWave].Phase != sluicev1.WavePending {
		return &s.Waves[s.CurrentWave]
	}
	return nil
}

// capped keeps the first n items and says how many more there were.
func capped(items []string, n int) []string {
	if len(items) <= n {
		return items
	}
	return append(append([]string(nil), items[:n]...), fmt.Sprintf("and %d more", len(items)-n))
}

func orUnknown(v string) string {
	if v == "" {
		return "no version (not found)"
	}
	return v
}
