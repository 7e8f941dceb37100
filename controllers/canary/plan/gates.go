package plan

import (
	"fmt"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// EventWaitingAtGate and EventPreRolloutFailed are the gate events Decide records.
const (
	EventWaitingAtGate    = "WaitingAtGate"
	EventPreRolloutFailed = "PreRolloutFailed"
	EventRollbackHook     = "RollbackRequested"
)

// HasWebhooks reports whether the spec has webhooks of type t.
func HasWebhooks(spec sluicev1.CanarySpec, t sluicev1.WebhookType) bool {
	for _, h := range spec.Analysis.Webhooks {
		if h.Type == t || (h.Type == "" && t == sluicev1.WebhookRollout) {
			return true
		}
	}
	return false
}

// GatesDue lists the gate types whose webhooks the controller must resolve before calling
// Decide: confirm-rollout before a new run starts; pre-rollout before the first traffic; rollout
// and rollback with every check; confirm-traffic-increase before every increase (never in an A/B
// or blue/green run); confirm-promotion before promotion (in an A/B or blue/green run, with the
// check that may complete the iterations). Only types the spec has webhooks for are listed.
func GatesDue(o Observed) []sluicev1.WebhookType {
	var due []sluicev1.WebhookType
	add := func(ts ...sluicev1.WebhookType) {
		for _, t := range ts {
			if HasWebhooks(o.Spec, t) {
				due = append(due, t)
			}
		}
	}
	phase := o.Status.Phase
	switch phase {
	case sluicev1.CanaryPhaseInitialized, sluicev1.CanaryPhaseSucceeded, sluicev1.CanaryPhaseFailed, sluicev1.CanaryPhaseWaiting:
		if o.Hold == nil && o.Stall == nil && o.Revision != o.Status.LastAppliedSpec && o.Revision != o.Status.LastPromotedSpec {
			add(sluicev1.WebhookConfirmRollout)
		}
		return due
	case sluicev1.CanaryPhaseProgressing, sluicev1.CanaryPhaseWaitingPromotion:
	case sluicev1.CanaryPhasePromoting:
		if AnalysisDue(o) {
			add(sluicev1.WebhookRollout, sluicev1.WebhookRollback)
		}
		return due
	default:
		return nil
	}
	if o.Revision != o.Status.LastAppliedSpec || o.Status.FailedChecks >= Threshold(o.Spec) || deadlinePassed(o) || o.Spec.SkipAnalysis {
		return nil
	}
	if _, ok := checkDue(o); !ok || lostWrite(o) || !o.Canary.IsReady(CanaryReadyThreshold(o.Spec)) ||
		o.Status.ConsecutiveErrors >= ConsecutiveErrorLimit(o.Spec) {
		return nil
	}
	w, iterated := o.Status.CanaryWeight, countsPassingChecks(o.Spec)
	held := o.Hold != nil || o.Stall != nil // the checks run; the gates of the advance wait
	if !trafficOn(o.Spec, o.Status) && phase == sluicev1.CanaryPhaseProgressing {
		if held {
			return due
		}
		if !o.Status.PreRolloutPassed && HasWebhooks(o.Spec, sluicev1.WebhookPreRollout) {
			add(sluicev1.WebhookPreRollout)
			return due
		}
		if !iterated { // as in Flagger, A/B and blue/green runs have no traffic increase to confirm
			add(sluicev1.WebhookConfirmTrafficIncrease)
		}
		return due
	}
	add(sluicev1.WebhookRollout, sluicev1.WebhookRollback)
	if held {
		return due
	}
	if iterated {
		if o.Status.Iterations+1 >= o.Spec.Analysis.Iterations {
			add(sluicev1.WebhookConfirmPromotion)
		}
		return due
	}
	if _, more := NextWeight(Steps(o.Spec.Analysis), w); more {
		add(sluicev1.WebhookConfirmTrafficIncrease)
	} else {
		add(sluicev1.WebhookConfirmPromotion)
	}
	return due
}

// gate returns the resolved result of gate type t, and whether it holds the run: a type without
// webhooks never holds; a due type without a result holds (the controller has not resolved it).
func gate(o Observed, t sluicev1.WebhookType) (GateResult, bool) {
	if !HasWebhooks(o.Spec, t) {
		return GateResult{Passed: true}, false
	}
	g, ok := o.Gates[t]
	if !ok {
		return GateResult{Message: fmt.Sprintf("%s gate not resolved yet", t)}, true
	}
	return g, !g.Passed
}
