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

// setConditions derives Ready, Reconciling and NamespacesSkipped from the status and the hold of
// this tick. Ready is True once every wave succeeded, False after a rollback, Unknown while the
// upgrade runs or waits; Reconciling is present only while it runs or waits, and names the next
// window's opening when a window holds it.
func setConditions(dp *sluicev1.DataPlane, hold *waves.Hold) {
	s := &dp.Status
	switch s.Phase {
	case sluicev1.DataPlaneUpToDate:
		msg := fmt.Sprintf("%d of %d running meshed pods run %s", s.Current, s.Desired, s.Target)
		setCondition(dp, sluicev1.ConditionReady, metav1.ConditionTrue, sluicev1.ReasonSucceeded, msg)
		apimeta.RemoveStatusCondition(&s.Conditions, sluicev1.ConditionReconciling)
	case sluicev1.DataPlaneRolledBack:
		msg := "The upgrade failed"
		if w := currentWave(s); w != nil {
			msg = fmt.Sprintf("Wave %d (%s) was rolled back; later waves did not start: %s", s.CurrentWave,
				strings.Join(w.Namespaces, ", "), failureOf(dp))
		}
		setCondition(dp, sluicev1.ConditionReady, metav1.ConditionFalse, sluicev1.ReasonRolledBack, msg)
		apimeta.RemoveStatusCondition(&s.Conditions, sluicev1.ConditionReconciling)
	default:
		reason, msg := progress(s)
		if hold != nil {
			reason, msg = hold.Reason, hold.Message
		}
		setCondition(dp, sluicev1.ConditionReady, metav1.ConditionUnknown, reason, msg)
		setCondition(dp, sluicev1.ConditionReconciling, metav1.ConditionTrue, reason, msg)
	}
	if len(s.Skipped) == 0 {
		apimeta.RemoveStatusCondition(&s.Conditions, sluicev1.ConditionNamespacesSkipped)
		return
	}
	var parts []string
	reason := s.Skipped[0].Reason
	for _, sk := range s.Skipped {
		parts = append(parts, sk.Message)
	}
	setCondition(dp, sluicev1.ConditionNamespacesSkipped, metav1.ConditionTrue, reason, strings.Join(parts, "; "))
}

// progress describes the running wave.
func progress(s *sluicev1.DataPlaneStatus) (reason, msg string) {
	w := currentWave(s)
	if w == nil {
		return sluicev1.ReasonProgressing, fmt.Sprintf("Planning the move to %s", s.Target)
	}
	where := fmt.Sprintf("Wave %d of %d (%s)", s.CurrentWave, len(s.Waves)-1, strings.Join(w.Namespaces, ", "))
	switch w.Phase {
	case sluicev1.WaveRestarting:
		return sluicev1.ReasonWaveRestarting, fmt.Sprintf("%s restarting: %d of %d running meshed pods on %s", where, w.Current, w.Desired, s.Target)
	case sluicev1.WaveBaking:
		return sluicev1.ReasonWaveBaking, fmt.Sprintf("%s baking on %s since %s, %d failed checks", where, s.Target,
			w.BakeStartedAt.UTC().Format(time.RFC3339), w.FailedChecks)
	case sluicev1.WaveRollingBack:
		return sluicev1.ReasonWaveRollingBack, fmt.Sprintf("%s rolling back: %d of %d running meshed pods still on %s", where, w.Current, w.Desired, s.Target)
	}
	return sluicev1.ReasonProgressing, fmt.Sprintf("%s: %s", where, w.Phase)
}

func currentWave(s *sluicev1.DataPlaneStatus) *sluicev1.DataPlaneWave {
	if int(s.CurrentWave) < len(s.Waves) && s.Waves[s.CurrentWave].Phase != sluicev1.WavePending {
		return &s.Waves[s.CurrentWave]
	}
	return nil
}

// failureOf keeps the reason of a rollback across quiet ticks: the Ready message of the tick
// that failed, or the failing metrics.
func failureOf(dp *sluicev1.DataPlane) string {
	var failing []string
	for _, r := range dp.Status.Analysis {
		if r.Verdict == sluicev1.VerdictFail || r.Verdict == sluicev1.VerdictNoData || r.Verdict == sluicev1.VerdictError {
			failing = append(failing, fmt.Sprintf("%s %s %s %s", r.Namespace, r.Name, r.Verdict, r.Value))
		}
	}
	if len(failing) == 0 {
		return "the wave made no progress within the progress deadline"
	}
	return "failing checks: " + strings.Join(failing, ", ")
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

// markSuspended records that reconciliation is suspended.
func markSuspended(dp *sluicev1.DataPlane) {
	setCondition(dp, sluicev1.ConditionReconciling, metav1.ConditionFalse, sluicev1.ReasonSuspended,
		"Reconciliation is suspended (spec.suspend): no wave starts, no workload restarts")
}
