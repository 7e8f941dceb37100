package plan

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// never is a call delay: the webhook never answers.
const never = time.Duration(-1)

// callSim resolves gates as the controller (gates.go: gateRound, gateKey) and its webhook runner
// do: one webhook per gate type, named after it; a call is keyed by its round (a call status
// records as pending is polled again instead of a new one), starts at its first poll and answers
// delay later (never, when negative), passing unless refuse says otherwise.
type callSim struct {
	delay   func(t sluicev1.WebhookType, w *world) time.Duration
	refuse  func(t sluicev1.WebhookType, w *world) bool
	started map[string]time.Time // the runner's memory, by key
	delays  map[string]time.Duration
	keys    map[sluicev1.WebhookType][]string // calls made, in order
}

func newCallSim(delay func(t sluicev1.WebhookType, w *world) time.Duration) *callSim {
	return &callSim{delay: delay, started: map[string]time.Time{}, delays: map[string]time.Duration{},
		keys: map[sluicev1.WebhookType][]string{}}
}

func (c *callSim) asks(t sluicev1.WebhookType) int { return len(c.keys[t]) }

func (c *callSim) resolve(w *world, o *Observed, t sluicev1.WebhookType) GateResult {
	name, key := string(t), c.round(o, t)
	for _, a := range o.Status.Webhooks {
		if a.Name == name && a.Round == key && !a.Pending {
			if a.Passed {
				return GateResult{Passed: true}
			}
			return GateResult{Message: name + ": " + a.Message}
		}
	}
	start, ok := c.started[key]
	if !ok {
		start = w.now
		c.started[key] = start
		c.delays[key] = c.delay(t, w)
		c.keys[t] = append(c.keys[t], key)
	}
	answer := sluicev1.WebhookStatus{Name: name, Type: t, Round: key, AskedAt: &metav1.Time{Time: start}}
	if d := c.delays[key]; d < 0 || w.now.Sub(start) < d {
		answer.Pending, answer.Message = true, "in flight"
		o.Answers = append(o.Answers, answer)
		return GateResult{Pending: true, Message: name + ": no answer yet (in flight)"}
	}
	answer.Passed = c.refuse == nil || !c.refuse(t, w)
	answer.AnsweredAt = &metav1.Time{Time: w.now}
	if !answer.Passed {
		answer.Message = "HTTP 403 Forbidden"
	}
	o.Answers = append(o.Answers, answer)
	if answer.Passed {
		return GateResult{Passed: true}
	}
	return GateResult{Message: name + ": " + answer.Message}
}

// round is the controller's gateRound: the pending call status records, else this round's key.
func (c *callSim) round(o *Observed, t sluicev1.WebhookType) string {
	prefix := fmt.Sprintf("%s/%s/", o.Revision, t)
	for _, a := range o.Status.Webhooks {
		if a.Name == string(t) && a.Pending && strings.HasPrefix(a.Round, prefix) {
			return a.Round
		}
	}
	s := o.Status
	var lastStep, waitRound int64
	if s.LastStepTime != nil {
		lastStep = s.LastStepTime.Unix()
	}
	if s.Phase == sluicev1.CanaryPhaseWaiting && s.LastTransitionTime != nil {
		waitRound = int64(o.Now.Sub(s.LastTransitionTime.Time) / Interval(o.Spec))
	}
	return fmt.Sprintf("%s%d/%d/%d/%d", prefix, s.Iterations, s.FailedChecks, lastStep, waitRound)
}

// checkTimes records when each check ran, around analysis.
func checkTimes(analysis func(*world) Check, times *[]time.Time) func(*world) Check {
	return func(w *world) Check {
		*times = append(*times, w.now)
		return analysis(w)
	}
}

// assertCadence fails unless consecutive checks are one interval apart (a tick's granularity
// more at most).
func assertCadence(t *testing.T, times []time.Time, interval time.Duration) {
	t.Helper()
	for i := 1; i < len(times); i++ {
		if gap := times[i].Sub(times[i-1]); gap < interval || gap > interval+2*time.Second {
			t.Errorf("check %d came %s after the one before, want the interval %s", i+1, gap, interval)
		}
	}
}

// TestPendingAdvanceGateHoldsOnlyTheAdvance: a confirm gate whose call never answers holds the
// step it confirms, and nothing else: the checks go on every interval, the failing canary rolls
// back at the threshold, and the hanging webhook is called once (no round calls it again while
// its call is pending).
func TestPendingAdvanceGateHoldsOnlyTheAdvance(t *testing.T) {
	tests := []struct {
		gate     sluicev1.WebhookType
		hangFrom int32 // the weight from which the gate's calls never answer
		failFrom int32 // the weight from which the checks fail
		heldAt   int32 // the weight the run stays at
	}{
		{gate: sluicev1.WebhookConfirmTrafficIncrease, hangFrom: 10, failFrom: 10, heldAt: 10},
		{gate: sluicev1.WebhookConfirmPromotion, hangFrom: 0, failFrom: 50, heldAt: 50},
	}
	for _, tt := range tests {
		t.Run(string(tt.gate), func(t *testing.T) {
			w := newWorld(withHooks(tt.gate))
			var checks []time.Time
			failingOnceHeld := func(w *world) Check {
				if w.status.CanaryWeight == tt.heldAt && w.status.Iterations >= 7 { // passes a while at the held weight, then fails
					return failingFrom(tt.failFrom)(w)
				}
				return passing(w)
			}
			w.analysis = checkTimes(failingOnceHeld, &checks)
			w.calls = newCallSim(func(_ sluicev1.WebhookType, w *world) time.Duration {
				if w.status.CanaryWeight >= tt.hangFrom {
					return never
				}
				return 0
			})
			w.initialized(t)
			w.targetRevision = "rev-2"
			w.runUntil(t, 2000, sluicev1.CanaryPhaseFailed)
			if w.status.FailedChecks != 5 || w.routeWeight != 0 || slices.Max(w.weightsSeen) != tt.heldAt {
				t.Errorf("failed %d, route %d, weights %v: want a rollback at the threshold from weight %d", w.status.FailedChecks, w.routeWeight, w.weightsSeen, tt.heldAt)
			}
			hung := 0
			for _, k := range w.calls.keys[tt.gate] {
				if w.calls.delays[k] == never {
					hung++
				}
			}
			if hung != 1 {
				t.Errorf("the hanging %s webhook was called %d times, want once: %v", tt.gate, hung, w.calls.keys[tt.gate])
			}
			assertCadence(t, checks, time.Minute)
			if !strings.Contains(strings.Join(w.log, "\n"), "failed checks threshold reached (5)") {
				t.Errorf("no threshold rollback in\n%s", strings.Join(w.log, "\n"))
			}
		})
	}
}

// TestPendingGateUnderTheProgressDeadline: a run whose gate call never answers still ends at its
// progress deadline — before any traffic (a pre-rollout webhook: no failed check is counted for a
// call without an answer) and with traffic whose checks never pass.
func TestPendingGateUnderTheProgressDeadline(t *testing.T) {
	t.Run("pre-rollout, no traffic", func(t *testing.T) {
		spec := withHooks(sluicev1.WebhookPreRollout)
		spec.ProgressDeadlineSeconds = ptr.To[int32](120)
		w := newWorld(spec)
		w.analysis = passing
		w.calls = newCallSim(func(sluicev1.WebhookType, *world) time.Duration { return never })
		w.initialized(t)
		w.targetRevision = "rev-2"
		w.runUntil(t, 500, sluicev1.CanaryPhaseFailed)
		if took := w.now.Sub(w.status.RunStartTime.Time); took < 120*time.Second || took > 122*time.Second {
			t.Errorf("rolled back %s after the run started, want at the 120s deadline", took)
		}
		if w.status.FailedChecks != 0 || len(w.weightsSeen) != 1 || w.calls.asks(sluicev1.WebhookPreRollout) != 1 {
			t.Errorf("failed checks %d, weights %v, pre-rollout calls %d: want no failed check, no traffic, one call",
				w.status.FailedChecks, w.weightsSeen, w.calls.asks(sluicev1.WebhookPreRollout))
		}
		if !strings.Contains(strings.Join(w.log, "\n"), "progress deadline exceeded") {
			t.Errorf("no deadline rollback in\n%s", strings.Join(w.log, "\n"))
		}
	})
	t.Run("confirm-promotion, checks without evidence", func(t *testing.T) {
		spec := withHooks(sluicev1.WebhookConfirmPromotion)
		spec.ProgressDeadlineSeconds = ptr.To[int32](300)
		w := newWorld(spec)
		var checks []time.Time
		w.analysis = checkTimes(func(w *world) Check {
			if w.status.CanaryWeight < 50 {
				return passing(w)
			}
			return Check{Summary: "request-success-rate: no data (skipped)",
				Results: []sluicev1.MetricResult{{Name: "request-success-rate", Verdict: sluicev1.VerdictSkipped}}}
		}, &checks)
		w.calls = newCallSim(func(sluicev1.WebhookType, *world) time.Duration { return never })
		w.initialized(t)
		w.targetRevision = "rev-2"
		w.runUntil(t, 2000, sluicev1.CanaryPhaseFailed)
		log := strings.Join(w.log, "\n")
		if !strings.Contains(log, "progress deadline exceeded (last check NoEvidence") {
			t.Errorf("no deadline rollback naming the last check in\n%s", log)
		}
		assertCadence(t, checks, time.Minute)
	})
}

// TestSlowGateTakesTheStepWhenItAnswers: a confirm-traffic-increase webhook that answers after 90
// s, longer than the 1m interval: each increase is asked once, the checks go on meanwhile, and the
// step is taken when the answer comes — between checks — not at the next check after it.
func TestSlowGateTakesTheStepWhenItAnswers(t *testing.T) {
	for _, delay := range []time.Duration{time.Second, 90 * time.Second} {
		t.Run(delay.String(), func(t *testing.T) {
			w := newWorld(withHooks(sluicev1.WebhookConfirmTrafficIncrease))
			var checks []time.Time
			w.analysis = checkTimes(passing, &checks)
			w.calls = newCallSim(func(sluicev1.WebhookType, *world) time.Duration { return delay })
			w.initialized(t)
			w.targetRevision = "rev-2"
			var asked, stepped []time.Time
			for range 3000 {
				weight, n := w.status.CanaryWeight, w.calls.asks(sluicev1.WebhookConfirmTrafficIncrease)
				w.tick(t)
				if w.calls.asks(sluicev1.WebhookConfirmTrafficIncrease) > n {
					asked = append(asked, w.now)
				}
				if w.status.CanaryWeight > weight && w.status.Phase == sluicev1.CanaryPhaseProgressing {
					stepped = append(stepped, w.now)
				}
				if w.status.Phase == sluicev1.CanaryPhaseSucceeded {
					break
				}
			}
			if w.status.Phase != sluicev1.CanaryPhaseSucceeded || !slices.Equal(w.weightsSeen, []int32{0, 10, 20, 30, 40, 50}) {
				t.Fatalf("phase %s, weights %v; want a promotion through 10..50\n%s", w.status.Phase, w.weightsSeen, strings.Join(w.log, "\n"))
			}
			if len(asked) != 5 || len(stepped) != 5 {
				t.Fatalf("asked %d times, stepped %d times; want each of the 5 increases asked once", len(asked), len(stepped))
			}
			for i := range asked {
				if lag := stepped[i].Sub(asked[i]); lag < delay || lag > delay+time.Second {
					t.Errorf("increase %d taken %s after its ask, want when the answer came (%s)", i+1, lag, delay)
				}
			}
			for i := 1; i < len(checks); i++ {
				if gap := checks[i].Sub(checks[i-1]); gap > time.Minute+2*time.Second {
					t.Errorf("check %d came %s after the one before: the pending gate delayed the checks", i+1, gap)
				}
			}
		})
	}
}

// TestPendingRolloutHook: the rollout webhook judges the canary with the metrics, so a check
// waits for its answer; but a check whose metrics fail counts at once, however long the webhook
// takes, and the webhook is not called again while its call is pending.
func TestPendingRolloutHook(t *testing.T) {
	t.Run("failing metrics count at once", func(t *testing.T) {
		w := newWorld(withHooks(sluicev1.WebhookRollout))
		var checks []time.Time
		w.analysis = checkTimes(failingFrom(10), &checks)
		w.calls = newCallSim(func(sluicev1.WebhookType, *world) time.Duration { return never })
		w.initialized(t)
		w.targetRevision = "rev-2"
		w.runUntil(t, 2000, sluicev1.CanaryPhaseFailed)
		if w.status.FailedChecks != 5 || w.calls.asks(sluicev1.WebhookRollout) != 1 {
			t.Errorf("failed %d, rollout calls %d: want the threshold with one call", w.status.FailedChecks, w.calls.asks(sluicev1.WebhookRollout))
		}
		assertCadence(t, checks, time.Minute)
	})
	t.Run("a passing check waits for the answer", func(t *testing.T) {
		w := newWorld(withHooks(sluicev1.WebhookRollout))
		w.analysis = passing
		w.calls = newCallSim(func(sluicev1.WebhookType, *world) time.Duration { return 20 * time.Second })
		w.initialized(t)
		w.targetRevision = "rev-2"
		var counted []time.Time
		for range 3000 {
			n := w.status.Iterations
			w.tick(t)
			if w.status.Iterations > n {
				counted = append(counted, w.now)
			}
			if w.status.Phase == sluicev1.CanaryPhaseSucceeded {
				break
			}
		}
		if w.status.Phase != sluicev1.CanaryPhaseSucceeded || w.status.FailedChecks != 0 {
			t.Fatalf("phase %s, failed %d; want a promotion", w.status.Phase, w.status.FailedChecks)
		}
		if w.calls.asks(sluicev1.WebhookRollout) != len(counted) {
			t.Errorf("%d rollout calls for %d checks, want one each", w.calls.asks(sluicev1.WebhookRollout), len(counted))
		}
		for i, key := range w.calls.keys[sluicev1.WebhookRollout] {
			if lag := counted[i].Sub(w.calls.started[key]); lag < 20*time.Second || lag > 21*time.Second {
				t.Errorf("check %d counted %s after its webhook was asked, want when it answered (20s)", i+1, lag)
			}
		}
	})
}

// TestPendingConfirmRolloutChangesNothing: a new revision whose confirm-rollout call has not
// answered yet stays where it is — no Waiting phase, no event — and starts when the call passes.
func TestPendingConfirmRolloutChangesNothing(t *testing.T) {
	w := newWorld(withHooks(sluicev1.WebhookConfirmRollout))
	w.analysis = passing
	w.calls = newCallSim(func(sluicev1.WebhookType, *world) time.Duration { return 5 * time.Second })
	w.initialized(t)
	w.targetRevision = "rev-2"
	w.tick(t) // the tick that sees the revision asks
	asked := w.now
	for w.status.Phase == sluicev1.CanaryPhaseInitialized {
		if w.calls.asks(sluicev1.WebhookConfirmRollout) != 1 {
			t.Fatalf("%d calls, want the one asked when the revision was seen", w.calls.asks(sluicev1.WebhookConfirmRollout))
		}
		if d := w.tick(t); len(d.Events) > 0 && w.status.Phase == sluicev1.CanaryPhaseInitialized {
			t.Fatalf("events while the call is pending: %+v", d.Events)
		}
		if w.now.Sub(asked) > time.Minute {
			t.Fatal("the run did not start once the call passed")
		}
	}
	if w.status.Phase != sluicev1.CanaryPhaseProgressing || w.now.Sub(asked) < 5*time.Second || w.calls.asks(sluicev1.WebhookConfirmRollout) != 1 {
		t.Errorf("phase %s %s after the revision with %d calls; want Progressing once the one call passed after 5s",
			w.status.Phase, w.now.Sub(asked), w.calls.asks(sluicev1.WebhookConfirmRollout))
	}
}

// TestPendingCallSurvivesARestart: the call a round left pending is in status.webhooks, so a
// controller that starts afresh (an empty runner) polls the same round's key — the webhook is
// asked again for that round, never for a new one — and the pending entry goes once the run ends.
func TestPendingCallSurvivesARestart(t *testing.T) {
	w := newWorld(withHooks(sluicev1.WebhookConfirmPromotion))
	w.analysis = passing
	w.calls = newCallSim(func(sluicev1.WebhookType, *world) time.Duration { return never })
	w.initialized(t)
	w.targetRevision = "rev-2"
	for w.calls.asks(sluicev1.WebhookConfirmPromotion) == 0 || w.status.Iterations < 8 {
		w.tick(t)
	}
	recorded := ""
	for _, a := range w.status.Webhooks {
		if a.Pending {
			recorded = a.Round
		}
	}
	if recorded != w.calls.keys[sluicev1.WebhookConfirmPromotion][0] {
		t.Fatalf("status.webhooks %+v does not record the pending call %s", w.status.Webhooks, w.calls.keys[sluicev1.WebhookConfirmPromotion][0])
	}
	restarted := newCallSim(func(sluicev1.WebhookType, *world) time.Duration { return 30 * time.Second })
	w.calls = restarted
	w.runUntil(t, 200, sluicev1.CanaryPhaseSucceeded)
	if got := restarted.keys[sluicev1.WebhookConfirmPromotion]; len(got) != 1 || got[0] != recorded {
		t.Errorf("after the restart the webhook was asked for %v, want the pending round %s alone", got, recorded)
	}
	for _, a := range w.status.Webhooks {
		if a.Pending {
			t.Errorf("a pending call is still recorded after the run: %+v", a)
		}
	}
}
