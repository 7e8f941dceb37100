package dataplane

import (
	"fmt"
	"strings"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/dataplane/waves"
)

// setCondition sets a condition with the DataPlane's generation.
func setCondition(dp *sluicev1.DataPlane, typ string, status metav1.ConditionStatus, reason, msg string) {
	apimeta.SetStatusCondition(&dp.Status.Conditions, metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: dp.Generation,
	})
}

// setAbnormal sets the abnormal-true condition typ when msg is not empty and removes it
// otherwise; it reports whether it became True or its message changed.
func setAbnormal(dp *sluicev1.DataPlane, typ, reason, msg string) bool {
	if msg == "" {
		apimeta.RemoveStatusCondition(&dp.Status.Conditions, typ)
		return false
	}
	prev := apimeta.FindStatusCondition(dp.Status.Conditions, typ)
	setCondition(dp, typ, metav1.ConditionTrue, reason, msg)
	return prev == nil || prev.Message != msg
}

// setConditions derives the conditions from the status and this tick's decision: Ready (True
// only when UpToDate; False with the root cause when RolledBack, Failed, Incomplete or Drifted;
// Unknown while a run is in flight), Reconciling while a run is in flight, and the abnormal-true
// ControlPlaneNotReady, Blocked, UnmanagedPods, Drifted and NamespacesSkipped. A Blocked
// condition that appears or changes is also a warning event.
func setConditions(dp *sluicev1.DataPlane, d *waves.Decision, out *outbox) {
	s := &dp.Status
	reason, msg := readiness(s, d.Hold)
	switch s.Phase {
	case sluicev1.DataPlaneUpToDate:
		setCondition(dp, sluicev1.ConditionReady, metav1.ConditionTrue, reason, msg)
		apimeta.RemoveStatusCondition(&s.Conditions, sluicev1.ConditionReconciling)
	case sluicev1.DataPlaneRolledBack, sluicev1.DataPlaneFailed, sluicev1.DataPlaneIncomplete, sluicev1.DataPlaneDrifted:
		setCondition(dp, sluicev1.ConditionReady, metav1.ConditionFalse, reason, msg)
		apimeta.RemoveStatusCondition(&s.Conditions, sluicev1.ConditionReconciling)
	default:
		setCondition(dp, sluicev1.ConditionReady, metav1.ConditionUnknown, reason, msg)
		setCondition(dp, sluicev1.ConditionReconciling, metav1.ConditionTrue, reason, msg)
	}

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
	if setAbnormal(dp, sluicev1.ConditionBlocked, blockReason, blocked) {
		out.warning(blockReason, "Wave blocked: "+blocked)
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

// markStalled sets Stalled=True (and Ready=False) with reason and message; it reports whether the
// condition changed, so the event is recorded once.
func markStalled(dp *sluicev1.DataPlane, reason, msg string) bool {
	prev := apimeta.FindStatusCondition(dp.Status.Conditions, sluicev1.ConditionStalled)
	changed := prev == nil || prev.Status != metav1.ConditionTrue || prev.Reason != reason || prev.Message != msg
	setCondition(dp, sluicev1.ConditionStalled, metav1.ConditionTrue, reason, msg)
	setCondition(dp, sluicev1.ConditionReady, metav1.ConditionFalse, reason, msg)
	return changed
}

// clearStalled removes the Stalled condition after a tick that made progress.
func clearStalled(dp *sluicev1.DataPlane) {
	apimeta.RemoveStatusCondition(&dp.Status.Conditions, sluicev1.ConditionStalled)
}

// markSuspended records that reconciliation is suspended; it reports whether that is new.
func markSuspended(dp *sluicev1.DataPlane) bool {
	prev := apimeta.FindStatusCondition(dp.Status.Conditions, sluicev1.ConditionReconciling)
	setCondition(dp, sluicev1.ConditionReconciling, metav1.ConditionFalse, sluicev1.ReasonSuspended,
		"Reconciliation is suspended (spec.suspend): no wave starts, no pod restarts")
	return prev == nil || prev.Reason != sluicev1.ReasonSuspended
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
