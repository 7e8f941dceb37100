package plan

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// EventWaitingAtGate and EventPreRolloutFailed are the gate events Decide records.
const (
	EventWaitingAtGate    = "WaitingAtGate"
	EventPreRolloutFailed = "PreRolloutFailed"
	EventRollbackHook     = "RollbackRequested"
)

// A gate webhook's call never suspends the run.
//
// The controller polls the calls of the gates due (GatesDue) without waiting for them (a call made
// this very tick gets one GatePoll to answer, which most do, before the tick decides without it),
// and a call still running is a pending GateResult. A pending gate holds only what it gates, as a
// hold does:
//
//   - confirm-rollout: the new run does not start yet (no phase change, no event);
//   - pre-rollout: the first step waits (a pending answer is no failed check), under the progress
//     deadline;
//   - rollout and rollback: these judge the canary with the metrics, so the check of a round
//     waits for their answer (their calls are bounded, see webhooks/budget.go) — unless its
//     metrics already failed or could not be judged: that check counts at once;
//   - confirm-traffic-increase and confirm-promotion: the check is taken on time, and only the
//     step waits. Their call is polled between checks, and once it passes the step is taken
//     then (gatedAdvance), if the last check passed and nothing else holds the run.
//
// Meanwhile the failed-check threshold, the consecutive-error limit and the progress deadline
// apply as under any hold. A webhook has one call at a time: a call pending when its round ends
// is recorded in status.webhooks (pending, with its round), and the next round that needs the
// webhook polls that call again instead of calling anew (the controller's gateRound), so no round
// calls twice and a restarted controller asks the same call.

// HasWebhooks reports whether the spec has webhooks of type t.
func HasWebhooks(spec sluicev1.CanarySpec, t sluicev1.WebhookType) bool {
	for _, h := range spec.Analysis.Webhooks {
		if h.Type == t || (h.Type == "" && t == sluicev1.WebhookRollout) {
			return true
		}
	}
	return false
}

// gatePoll is how soon to look again while a gate's call is in flight.
const gatePoll = time.Second

// GatePoll is how soon to look again while a gate's call is pending, shorter than the interval:
// the requeue policy keeps a retry of an idle-phase Canary only when it is shorter than an
// interval, and nothing else wakes a Canary whose gate answer arrives.
func GatePoll(spec sluicev1.CanarySpec) time.Duration {
	return min(gatePoll, Interval(spec)/2)
}

// GatesDue lists the gate types whose webhooks the controller must resolve before calling
// Decide: confirm-rollout before a new run starts; pre-rollout before the first traffic; rollout
// and rollback with every check; confirm-traffic-increase before every increase (never in an A/B
// or blue/green run); confirm-promotion before promotion (in an A/B or blue/green run, with the
// check that may complete the iterations). Between checks, the advance gate whose call is still
// pending (status.webhooks) is polled, so its answer takes the step when it comes. Only types the
// spec has webhooks for are listed.
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
	if lostWrite(o) || !o.Canary.IsReady(CanaryReadyThreshold(o.Spec)) || o.Status.ConsecutiveErrors >= ConsecutiveErrorLimit(o.Spec) {
		return nil
	}
	held := o.Hold != nil || o.Stall != nil // the checks run; the gates of the advance wait
	on := trafficOn(o.Spec, o.Status)
	if _, ok := checkDue(o); !ok {
		if on && !held {
			for _, t := range []sluicev1.WebhookType{sluicev1.WebhookConfirmTrafficIncrease, sluicev1.WebhookConfirmPromotion} {
				if askPending(o.Status, t) {
					add(t)
				}
			}
		}
		return due
	}
	w, iterated := o.Status.CanaryWeight, countsPassingChecks(o.Spec)
	if !on && phase == sluicev1.CanaryPhaseProgressing {
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

// askPending reports whether status records a call of a webhook of type t still pending.
func askPending(s sluicev1.CanaryStatus, t sluicev1.WebhookType) bool {
	for _, a := range s.Webhooks {
		if a.Type == t && a.Pending {
			return true
		}
	}
	return false
}

// gate returns the resolved result of gate type t, and whether it holds the run: a type without
// webhooks never holds; a due type without a result holds (the controller has not resolved it);
// a pending one holds (GateResult.Pending says so).
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

// gatePending reports whether a due gate of type t waits for its call's answer.
func gatePending(o Observed, t sluicev1.WebhookType) bool {
	g, ok := o.Gates[t]
	return ok && g.Pending
}

// anyGatePending reports whether any due gate waits for its call's answer.
func anyGatePending(o Observed) bool {
	for _, g := range o.Gates {
		if g.Pending {
			return true
		}
	}
	return false
}

// recordAnswers keeps this tick's gate webhook answers in status.webhooks (one per webhook, the
// latest round), so a restarted controller reads them instead of calling again.
func recordAnswers(o Observed, d *Decision) {
	for _, a := range o.Answers {
		if !a.Pending {
			recordAnswer(d, a)
		}
	}
}

// recordPendingCalls records the calls still pending at the end of the decision, so that the next
// round that needs their webhooks polls them instead of calling again (see gateRound in the
// controller). A pending call is written only with a status that changes anyway — its round is
// named after the status, which moves only then — or while Waiting, whose rounds move with the
// clock. Once the run ends, the pending calls of its gates are forgotten.
func recordPendingCalls(o Observed, d *Decision) {
	if ended := d.Status.Phase == sluicev1.CanaryPhaseSucceeded || d.Status.Phase == sluicev1.CanaryPhaseFailed; ended && o.Status.Phase != d.Status.Phase {
		kept := d.Status.Webhooks[:0:0]
		for _, a := range d.Status.Webhooks {
			if !a.Pending {
				kept = append(kept, a)
			}
		}
		if len(kept) != len(d.Status.Webhooks) {
			d.Status.Webhooks = kept
		}
		return
	}
	if d.Status.Phase != sluicev1.CanaryPhaseWaiting && equality.Semantic.DeepEqual(d.Status, o.Status) {
		return
	}
	for _, a := range o.Answers {
		if a.Pending {
			recordAnswer(d, a)
		}
	}
}

// recordAnswer puts a in status.webhooks in place of the webhook's earlier entry.
func recordAnswer(d *Decision, a sluicev1.WebhookStatus) {
	for i := range d.Status.Webhooks {
		if d.Status.Webhooks[i].Name == a.Name {
			d.Status.Webhooks[i] = a
			return
		}
	}
	d.Status.Webhooks = append(d.Status.Webhooks, a)
}

// pollWhilePending looks again soon while a gate this decision still waits at has a call
// pending (and the phase did not move on without it).
func pollWhilePending(o Observed, d *Decision) {
	if anyGatePending(o) && d.Status.Phase == o.Status.Phase && d.RequeueAfter > GatePoll(o.Spec) {
		d.RequeueAfter = GatePoll(o.Spec)
	}
}
