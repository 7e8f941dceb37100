package canary

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/canary/plan"
	"sluice.dev/sluice/controllers/internal/planevent"
	"sluice.dev/sluice/controllers/internal/reconcilekit"
)

// setPhaseConditions derives Ready, Reconciling and Promoted from the phase. Ready is True while
// the primary serves in a steady state, Unknown during a run, False after a rollback; Reconciling
// is present only while a run is pending or in flight.
func setPhaseConditions(c *sluicev1.Canary, hold *plan.Hold, unready string, events []planevent.Event) {
	s := &c.Status
	switch s.Phase {
	case sluicev1.CanaryPhaseInitializing:
		if hold != nil { // waiting for the primary (what it waits on) or the metrics server
			reconcilekit.SetSummary(c, reconcilekit.Summary{Ready: metav1.ConditionFalse, Reason: hold.Reason, Message: hold.Message, Reconciling: true,
				ReconcilingMessage: hold.Message})
			break
		}
		reconcilekit.SetSummary(c, reconcilekit.Summary{Ready: metav1.ConditionFalse, Reason: sluicev1.ReasonInitializing,
			Message: "Waiting for the primary to become ready", Reconciling: true, ReconcilingMessage: "Creating the primary"})
	case sluicev1.CanaryPhaseInitialized:
		reconcilekit.SetSummary(c, reconcilekit.Summary{Ready: metav1.ConditionTrue, Reason: sluicev1.ReasonInitialized,
			Message: "The primary serves all traffic"})
	case sluicev1.CanaryPhaseWaiting:
		msg := "Waiting to start the run"
		reason := sluicev1.ReasonWaiting
		if hold != nil {
			msg, reason = hold.Message, hold.Reason
		}
		reconcilekit.SetSummary(c, reconcilekit.Summary{Ready: metav1.ConditionUnknown, Reason: reason, Message: msg, Reconciling: true})
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
		inLine := hold != nil && hold.Reason == sluicev1.ReasonRolloutCapReached // a resumed run, back in line for a slot
		if hold != nil && (s.Phase == sluicev1.CanaryPhaseProgressing || (hold.Deliberate || inLine) && s.Phase == sluicev1.CanaryPhaseWaitingPromotion) {
			msg, reason = msg+"; held: "+hold.Message, hold.Reason
		}
		if refused := refusedGates(c); refused != "" {
			msg, reason = msg+"; the step waits at "+refused, plan.EventWaitingAtGate
		}
		if unready != "" {
			msg, reason = msg+"; "+unready, sluicev1.ReasonCanaryUnready
		}
		reconcilekit.SetSummary(c, reconcilekit.Summary{Ready: metav1.ConditionUnknown, Reason: reason, Message: msg, Reconciling: true})
	case sluicev1.CanaryPhaseSucceeded:
		msg := fmt.Sprintf("Revision %s promoted: the primary serves it", s.LastPromotedSpec)
		reconcilekit.SetSummary(c, reconcilekit.Summary{Ready: metav1.ConditionTrue, Reason: sluicev1.ReasonSucceeded, Message: msg})
		reconcilekit.SetCondition(c, sluicev1.ConditionPromoted, metav1.ConditionTrue, sluicev1.ReasonSucceeded, msg)
	case sluicev1.CanaryPhaseFailed:
		msg := fmt.Sprintf("Revision %s rolled back", s.LastAppliedSpec)
		for _, e := range events {
			if e.Reason == plan.EventRollback {
				msg = e.Message
			}
		}
		if cur := reconcilekit.FindCondition(c, sluicev1.ConditionPromoted); len(events) == 0 && cur != nil &&
			cur.Status == metav1.ConditionFalse {
			msg = cur.Message // keep the rollback reason on quiet ticks
		}
		reconcilekit.SetSummary(c, reconcilekit.Summary{Ready: metav1.ConditionFalse, Reason: sluicev1.ReasonRolledBack, Message: msg})
		reconcilekit.SetCondition(c, sluicev1.ConditionPromoted, metav1.ConditionFalse, sluicev1.ReasonRolledBack, msg)
	}
}

// refusedGates names the confirm gates of the run's current step whose last answer refused it, or
// whose call has not answered yet ("" when none): the step waits there until they pass.
func refusedGates(c *sluicev1.Canary) string {
	gates := map[sluicev1.WebhookType]bool{sluicev1.WebhookConfirmPromotion: true}
	switch c.Status.Phase {
	case sluicev1.CanaryPhaseProgressing:
		// A refused confirm-promotion gate moves the run to WaitingPromotion; one that has not
		// answered yet leaves it Progressing.
		gates[sluicev1.WebhookConfirmTrafficIncrease] = true
	case sluicev1.CanaryPhaseWaitingPromotion:
	default:
		return ""
	}
	var refused []string
	for _, a := range c.Status.Webhooks {
		if !gates[a.Type] || a.Passed || !strings.Contains(a.Round, "/"+c.Status.LastAppliedSpec+"/") {
			continue
		}
		switch {
		case a.Pending:
			refused = append(refused, fmt.Sprintf("%s gate: %s (no answer yet)", a.Type, a.Name))
		case a.Type == sluicev1.WebhookConfirmTrafficIncrease || c.Status.Phase == sluicev1.CanaryPhaseWaitingPromotion:
			refused = append(refused, fmt.Sprintf("%s gate: %s (refused: %s)", a.Type, a.Name, a.Message))
		}
	}
	return strings.Join(refused, ", ")
}

// unreadyCanary describes a run's canary below its ready threshold ("" when it is ready, or no
// run is in flight): its weight stays 0 while the progress deadline runs. Before the run's first
// step (status.lastStepTime unset) the canary was just scaled up and its pods are starting: the
// message leaves their count out, which would change as the Deployment controller sees the new
// replicas and as each pod turns ready, each change another status write of every starting run.
// A canary that lost its ready pods later in the run is described with the counts.
func unreadyCanary(c *sluicev1.Canary, o plan.Observed) string {
	if !runningPhases[c.Status.Phase] || !o.Canary.Exists || o.Canary.IsReady(plan.CanaryReadyThreshold(c.Spec)) {
		return ""
	}
	if c.Status.LastStepTime == nil {
		return fmt.Sprintf("the canary's pods are starting: no traffic to it until %d%% of them are ready, within the progress deadline (%s)",
			plan.CanaryReadyThreshold(c.Spec), plan.ProgressDeadline(c.Spec))
	}
	return fmt.Sprintf("the canary has %d/%d ready pods, below its ready threshold %d%%: no traffic to it, waiting for it within the progress deadline (%s)",
		o.Canary.Ready, o.Canary.Desired, plan.CanaryReadyThreshold(c.Spec), plan.ProgressDeadline(c.Spec))
}
