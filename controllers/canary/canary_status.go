package canary

import (
	"fmt"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/canary/plan"
)

// setCondition sets a condition with the Canary's generation.
func setCondition(c *sluicev1.Canary, typ string, status metav1.ConditionStatus, reason, msg string) {
	apimeta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: c.Generation,
	})
}

// setPhaseConditions derives Ready, Reconciling and Promoted from the phase. Ready is True while
// the primary serves in a steady state, Unknown during a run, False after a rollback; Reconciling
// is present only while a run is pending or in flight.
func setPhaseConditions(c *sluicev1.Canary, hold *plan.Hold, events []plan.Event) {
	s := &c.Status
	switch s.Phase {
	case sluicev1.CanaryPhaseInitializing:
		setCondition(c, sluicev1.ConditionReady, metav1.ConditionFalse, sluicev1.ReasonInitializing, "Waiting for the primary to become ready")
		setCondition(c, sluicev1.ConditionReconciling, metav1.ConditionTrue, sluicev1.ReasonInitializing, "Creating the primary")
	case sluicev1.CanaryPhaseInitialized:
		setCondition(c, sluicev1.ConditionReady, metav1.ConditionTrue, sluicev1.ReasonInitialized, "The primary serves all traffic")
		apimeta.RemoveStatusCondition(&s.Conditions, sluicev1.ConditionReconciling)
	case sluicev1.CanaryPhaseWaiting:
		msg := "Waiting to start the run"
		reason := sluicev1.ReasonWaiting
		if hold != nil {
			msg, reason = hold.Message, hold.Reason
		}
		setCondition(c, sluicev1.ConditionReady, metav1.ConditionUnknown, reason, msg)
		setCondition(c, sluicev1.ConditionReconciling, metav1.ConditionTrue, reason, msg)
	case sluicev1.CanaryPhaseProgressing, sluicev1.CanaryPhaseWaitingPromotion, sluicev1.CanaryPhasePromoting, sluicev1.CanaryPhaseFinalising:
		msg := fmt.Sprintf("%s revision %s at canary weight %d, %d failed checks", s.Phase, s.LastAppliedSpec, s.CanaryWeight, s.FailedChecks)
		reason := sluicev1.ReasonProgressing
		if lc := s.LastCheck; lc != nil {
			switch lc.Outcome {
			case sluicev1.CheckNoEvidence:
				if !lc.AdvancedWithoutData {
					msg, reason = msg+"; the last check had no evidence, the step holds: "+lc.Message, sluicev1.ReasonNoEvidence
				}
			case sluicev1.CheckError:
				msg, reason = msg+fmt.Sprintf("; %d checks in a row could not be judged, the step holds: %s", s.ConsecutiveErrors, lc.Message),
					sluicev1.ReasonMetricsUnavailable
			}
		}
		if hold != nil && s.Phase == sluicev1.CanaryPhaseProgressing {
			msg, reason = msg+"; held: "+hold.Message, hold.Reason
		}
		setCondition(c, sluicev1.ConditionReady, metav1.ConditionUnknown, reason, msg)
		setCondition(c, sluicev1.ConditionReconciling, metav1.ConditionTrue, reason, msg)
	case sluicev1.CanaryPhaseSucceeded:
		msg := fmt.Sprintf("Revision %s promoted: the primary serves it", s.LastPromotedSpec)
		setCondition(c, sluicev1.ConditionReady, metav1.ConditionTrue, sluicev1.ReasonSucceeded, msg)
		setCondition(c, sluicev1.ConditionPromoted, metav1.ConditionTrue, sluicev1.ReasonSucceeded, msg)
		apimeta.RemoveStatusCondition(&s.Conditions, sluicev1.ConditionReconciling)
	case sluicev1.CanaryPhaseFailed:
		msg := fmt.Sprintf("Revision %s rolled back", s.LastAppliedSpec)
		for _, e := range events {
			if e.Reason == plan.EventRollback {
				msg = e.Message
			}
		}
		if cur := apimeta.FindStatusCondition(s.Conditions, sluicev1.ConditionPromoted); len(events) == 0 && cur != nil &&
			cur.Status == metav1.ConditionFalse {
			msg = cur.Message // keep the rollback reason on quiet ticks
		}
		setCondition(c, sluicev1.ConditionReady, metav1.ConditionFalse, sluicev1.ReasonRolledBack, msg)
		setCondition(c, sluicev1.ConditionPromoted, metav1.ConditionFalse, sluicev1.ReasonRolledBack, msg)
		apimeta.RemoveStatusCondition(&s.Conditions, sluicev1.ConditionReconciling)
	}
}

// markStalled sets Stalled=True (and Ready=False) with reason and message; it reports whether the
// condition changed, so the event is recorded once.
func markStalled(c *sluicev1.Canary, reason, msg string) bool {
	prev := apimeta.FindStatusCondition(c.Status.Conditions, sluicev1.ConditionStalled)
	changed := prev == nil || prev.Status != metav1.ConditionTrue || prev.Reason != reason || prev.Message != msg
	setCondition(c, sluicev1.ConditionStalled, metav1.ConditionTrue, reason, msg)
	setCondition(c, sluicev1.ConditionReady, metav1.ConditionFalse, reason, msg)
	return changed
}

// clearStalled removes the Stalled condition after a tick that made progress.
func clearStalled(c *sluicev1.Canary) {
	apimeta.RemoveStatusCondition(&c.Status.Conditions, sluicev1.ConditionStalled)
}

// markWaiting records why the Canary waits without being stalled.
func markWaiting(c *sluicev1.Canary, reason, msg string) {
	setCondition(c, sluicev1.ConditionReady, metav1.ConditionFalse, reason, msg)
	setCondition(c, sluicev1.ConditionReconciling, metav1.ConditionTrue, reason, msg)
}

// markSuspended records that reconciliation is suspended; it reports whether it just became so.
func markSuspended(c *sluicev1.Canary) bool {
	was := isSuspended(c)
	setCondition(c, sluicev1.ConditionReconciling, metav1.ConditionFalse, sluicev1.ReasonSuspended, "Reconciliation is suspended (spec.suspend)")
	return !was
}

// isSuspended reports whether the status says reconciliation is suspended.
func isSuspended(c *sluicev1.Canary) bool {
	cond := apimeta.FindStatusCondition(c.Status.Conditions, sluicev1.ConditionReconciling)
	return cond != nil && cond.Reason == sluicev1.ReasonSuspended
}

// removeCondition drops a condition type.
func removeCondition(c *sluicev1.Canary, typ string) {
	apimeta.RemoveStatusCondition(&c.Status.Conditions, typ)
}
