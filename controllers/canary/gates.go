package canary

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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

// resolveGates polls the webhooks of every due gate type, never waiting for a call. A webhook
// whose answer for its round status.webhooks already records is not called again (a restarted
// controller reads it there); a webhook with a call still pending from an earlier round polls that
// call (gateRound). It returns each type's result — Pending while a call has not answered and none
// refused — and the answers and pending calls to record (plan.Decide records a pending call only
// when its round may move; see plan's gates.go). fresh reports a call this very tick made: the
// caller gives it one short poll to answer before deciding without it, so that a hook answering
// at once takes its step in one tick (one status write), as it always did.
func (r *Reconciler) resolveGates(canary *sluicev1.Canary, o plan.Observed) (gates map[sluicev1.WebhookType]plan.GateResult, answers []sluicev1.WebhookStatus, fresh bool) {
	due := plan.GatesDue(o)
	if len(due) == 0 {
		return nil, nil, false
	}
	out := map[sluicev1.WebhookType]plan.GateResult{}
	for _, t := range due {
		var failures, pending []string
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
			round := gateRound(canary, o, h)
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
			answer := sluicev1.WebhookStatus{Name: h.Name, Type: t, Round: round, Message: call.Message,
				AskedAt: askedAt(o.Status, h.Name, round, o.Now)}
			switch call.State {
			case webhooks.Pending:
				pending = append(pending, fmt.Sprintf("%s: no answer yet (%s)", h.Name, call.Message))
				answer.Pending = true
				fresh = fresh || call.New
			case webhooks.Failed:
				fail(h, call.Message)
			case webhooks.Passed:
				answer.Passed = true
			}
			if !answer.Pending {
				answer.AnsweredAt = stampNow(o.Now)
			}
			answers = append(answers, answer)
		}
		switch {
		case len(failures) > 0:
			out[t] = plan.GateResult{Message: strings.Join(failures, "; "), Muted: muted}
		case len(pending) > 0:
			out[t] = plan.GateResult{Pending: true, Message: strings.Join(pending, "; ")}
		default:
			out[t] = plan.GateResult{Passed: true}
		}
	}
	return out, answers, fresh
}

// recordedAnswer returns the answer status records for webhook name in round (not a pending call).
func recordedAnswer(s sluicev1.CanaryStatus, name, round string) (sluicev1.WebhookStatus, bool) {
	for _, a := range s.Webhooks {
		if a.Name == name && a.Round == round && !a.Pending {
			return a, true
		}
	}
	return sluicev1.WebhookStatus{}, false
}

// gateRound is the key of the call webhook h answers this tick with: the call status records as
// still pending for h in this revision, if any (a webhook has one call at a time, and a round that
// began while it ran waits for its answer), else this round's (gateKey).
func gateRound(c *sluicev1.Canary, o plan.Observed, h sluicev1.CanaryWebhook) string {
	prefix := fmt.Sprintf("%s/%s/%s/%s/", c.UID, o.Revision, webhookType(h), h.Name)
	for _, a := range o.Status.Webhooks {
		if a.Name == h.Name && a.Pending && strings.HasPrefix(a.Round, prefix) {
			return a.Round
		}
	}
	return gateKey(c, o, h)
}

// askedAt is when the call of round was first recorded pending for webhook name, else now.
func askedAt(s sluicev1.CanaryStatus, name, round string, now time.Time) *metav1.Time {
	for _, a := range s.Webhooks {
		if a.Name == name && a.Round == round && a.AskedAt != nil {
			return a.AskedAt.DeepCopy()
		}
	}
	return stampNow(now)
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
