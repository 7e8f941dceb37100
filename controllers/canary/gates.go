package canary

import (
	"context"
	"fmt"
	"strings"
	"time"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/canary/plan"
	"sluice.dev/sluice/controllers/internal/planevent"
	"sluice.dev/sluice/controllers/internal/reconcilekit"
	"sluice.dev/sluice/webhooks"
)

// GateRunner runs webhook calls in the background; webhooks.Runner implements it.
type GateRunner interface {
	// Poll returns the state of the call named key without blocking, starting it on first use.
	Poll(key string, hook sluicev1.CanaryWebhook, p webhooks.Payload) webhooks.Result
	// Fire calls hook in the background and forgets it.
	Fire(hook sluicev1.CanaryWebhook, p webhooks.Payload)
}

// gatePoll is how soon to look again while a gate's call is in flight.
const gatePoll = time.Second

// gatePollFor is gatePoll for a Canary of spec, shorter than its interval: the requeue policy
// (nextLook) keeps a retry of an idle-phase Canary only when it is shorter than an interval, and
// nothing else wakes a Canary whose gate answer arrives (a confirm-rollout gate of a new revision).
func gatePollFor(spec sluicev1.CanarySpec) time.Duration {
	return min(gatePoll, plan.Interval(spec)/2)
}

// resolveGates polls the webhooks of every due gate type. A webhook whose answer for this round
// status.webhooks already records is not called again (a restarted controller reads it there);
// new final answers are returned to be recorded. It returns the resolved results, or
// pending=true when any call is still running: the tick then decides nothing and looks again
// shortly, so a slow hook never holds a worker.
func (r *Reconciler) resolveGates(canary *sluicev1.Canary, o plan.Observed) (map[sluicev1.WebhookType]plan.GateResult, []sluicev1.WebhookStatus, bool) {
	due := plan.GatesDue(o)
	if len(due) == 0 {
		return nil, nil, false
	}
	out := map[sluicev1.WebhookType]plan.GateResult{}
	var answers []sluicev1.WebhookStatus
	pending := false
	for _, t := range due {
		res := plan.GateResult{Passed: true}
		var failures []string
		muted := true // every failing webhook mutes its alert
		fail := func(h sluicev1.CanaryWebhook, msg string) {
			failures = append(failures, h.Name+": "+msg)
			muted = muted && h.MuteAlert
		}
		for _, h := range canary.Spec.Analysis.Webhooks {
			if webhookType(h) != t {
				continue
			}
			if h.Manual {
				fail(h, fmt.Sprintf("waiting for approval (kubectl sluice promote, annotation %s)", sluicev1.AnnotationPromote))
				continue
			}
			round := gateKey(canary, o, h)
			if a, ok := recordedAnswer(o.Status, h.Name, round); ok {
				if !a.Passed {
					fail(h, a.Message)
				}
				continue
			}
			if r.Gates == nil {
				fail(h, "no webhook runner configured")
				continue
			}
			call := r.Gates.Poll(round, h, payload(canary, o.Revision, t))
			switch call.State {
			case webhooks.Pending:
				pending = true
				continue
			case webhooks.Failed:
				fail(h, call.Message)
			}
			answers = append(answers, sluicev1.WebhookStatus{Name: h.Name, Type: t, Round: round,
				Passed: call.State == webhooks.Passed, Message: call.Message, AnsweredAt: stampNow(o.Now)})
		}
		if len(failures) > 0 {
			res = plan.GateResult{Message: strings.Join(failures, "; "), Muted: muted}
		}
		out[t] = res
	}
	return out, answers, pending
}

// recordedAnswer returns the answer status records for webhook name in round.
func recordedAnswer(s sluicev1.CanaryStatus, name, round string) (sluicev1.WebhookStatus, bool) {
	for _, a := range s.Webhooks {
		if a.Name == name && a.Round == round {
			return a, true
		}
	}
	return sluicev1.WebhookStatus{}, false
}

// gateKey names one call of a hook: the Canary, the revision, the hook and the check round (checks
// done, failed checks, the last step's time; while Waiting, the intervals waited), so each round
// asks again and a restarted controller asks the same round again.
func gateKey(c *sluicev1.Canary, o plan.Observed, h sluicev1.CanaryWebhook) string {
	s := o.Status
	var lastStep int64
	if s.LastStepTime != nil {
		lastStep = s.LastStepTime.Unix()
	}
	var waitRound int64
	if s.Phase == sluicev1.CanaryPhaseWaiting && s.LastTransitionTime != nil {
		waitRound = int64(o.Now.Sub(s.LastTransitionTime.Time) / plan.Interval(c.Spec))
	}
	return fmt.Sprintf("%s/%s/%s/%s/%d/%d/%d/%d", c.UID, o.Revision, webhookType(h), h.Name, s.Iterations, s.FailedChecks, lastStep, waitRound)
}

func webhookType(h sluicev1.CanaryWebhook) sluicev1.WebhookType {
	if h.Type == "" {
		return sluicev1.WebhookRollout
	}
	return h.Type
}

func payload(c *sluicev1.Canary, revision string, t sluicev1.WebhookType) webhooks.Payload {
	return webhooks.Payload{Name: c.Name, Namespace: c.Namespace, Phase: string(c.Status.Phase), Checksum: revision, Type: string(t)}
}

// queueHooks queues the fire-and-forget hooks of this tick's decision in the outbox, called once
// its status is written: post-rollout when a run ended, and event hooks for every event.
func (r *Reconciler) queueHooks(tick *reconcilekit.Tick, c *sluicev1.Canary, events []planevent.Event) {
	if r.Gates == nil || len(events) == 0 {
		return
	}
	tick.Defer(func(context.Context) { r.fireHooks(c, events) })
}

// fireHooks calls the hooks of events.
func (r *Reconciler) fireHooks(c *sluicev1.Canary, events []planevent.Event) {
	ended := false
	for _, e := range events {
		if e.Reason == plan.EventSucceeded || e.Reason == plan.EventRollback {
			ended = true
		}
	}
	for _, h := range c.Spec.Analysis.Webhooks {
		switch webhookType(h) {
		case sluicev1.WebhookPostRollout:
			if ended {
				r.Gates.Fire(h, payload(c, c.Status.LastAppliedSpec, sluicev1.WebhookPostRollout))
			}
		case sluicev1.WebhookEvent:
			for _, e := range events {
				p := payload(c, c.Status.LastAppliedSpec, sluicev1.WebhookEvent)
				p.Metadata = map[string]string{"eventType": e.Type, "reason": e.Reason, "message": e.Message}
				r.Gates.Fire(h, p)
			}
		}
	}
}
