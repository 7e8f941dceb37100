package plan

import (
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/internal/planevent"
	"sluice.dev/sluice/test/golden"
)

// abSpec is the seed's analysis as a Flagger A/B test: requests with x-canary: insider go to the
// canary for 5 checks, no weights.
func abSpec() sluicev1.CanarySpec {
	spec := seedSpec()
	spec.Analysis.StepWeight, spec.Analysis.MaxWeight = 0, 0
	spec.Analysis.Iterations = 5
	spec.Analysis.Match = []sluicev1.HTTPMatchRequest{{Headers: map[string]sluicev1.StringMatch{"x-canary": {Exact: ptr.To("insider")}}}}
	return spec
}

// countingChecks returns an analysis that fails the checks numbered in failing (1-based) and
// counts every check in *n; it fails the test when a check runs without A/B routing.
func countingChecks(t *testing.T, n *int, failing ...int) func(w *world) Check {
	return func(w *world) Check {
		*n++
		if !w.abOn {
			t.Fatalf("check %d ran without A/B routing", *n)
		}
		if slices.Contains(failing, *n) {
			return failingFrom(0)(w)
		}
		return passing(w)
	}
}

func TestGoldenABSuccessfulRun(t *testing.T) {
	w := newWorld(abSpec())
	checks := 0
	w.analysis = countingChecks(t, &checks)
	w.initialized(t)
	w.targetRevision = "rev-2"
	w.runUntil(t, 50, sluicev1.CanaryPhaseSucceeded)
	if checks != 5 || w.status.Iterations != 5 {
		t.Errorf("checks %d, iterations %d; want 5 and 5", checks, w.status.Iterations)
	}
	for _, wt := range w.weightsSeen {
		if wt != 0 {
			t.Fatalf("weights %v in an A/B run, want only 0", w.weightsSeen)
		}
	}
	if w.abOn || w.routeWeight != 0 || w.canaryReplicas != 0 || w.primaryRevision != "rev-2" {
		t.Errorf("after promotion: A/B routing %v, route %d, canary replicas %d, primary %s", w.abOn, w.routeWeight, w.canaryReplicas, w.primaryRevision)
	}
	golden.Assert(t, "ab-successful-run", w.log)
}

func TestGoldenABRollback(t *testing.T) {
	w := newWorld(abSpec())
	checks := 0
	w.analysis = countingChecks(t, &checks, 3, 4, 5, 6, 7)
	w.initialized(t)
	w.targetRevision = "rev-2"
	w.runUntil(t, 50, sluicev1.CanaryPhaseFailed)
	if w.status.FailedChecks != 5 || w.status.Iterations != 2 || w.abOn || w.canaryReplicas != 0 || w.primaryRevision != "rev-1" {
		t.Errorf("after rollback: failed %d, iterations %d, A/B routing %v, canary replicas %d, primary %s",
			w.status.FailedChecks, w.status.Iterations, w.abOn, w.canaryReplicas, w.primaryRevision)
	}
	for i := 0; i < 5; i++ {
		if d := w.tick(t); len(d.Events) != 0 || len(d.Actions) != 0 || w.status.Phase != sluicev1.CanaryPhaseFailed {
			t.Fatalf("Failed A/B canary acted again: %+v", d)
		}
	}
	golden.Assert(t, "ab-rollback", w.log)
}

func TestGoldenABNewRevisionRestarts(t *testing.T) {
	w := newWorld(abSpec())
	w.analysis = passing
	w.initialized(t)
	w.targetRevision = "rev-2"
	for w.status.Iterations < 2 {
		w.tick(t)
	}
	w.targetRevision = "rev-3"
	d := w.tick(t)
	if !slices.Equal(d.Actions, []Action{ActionABRoutesOff, ActionSetWeights, ActionScaleCanaryUp}) {
		t.Fatalf("actions on a new revision %v, want the A/B routing off first", d.Actions)
	}
	if w.abOn || w.status.Iterations != 0 || w.status.LastAppliedSpec != "rev-3" || w.status.Phase != sluicev1.CanaryPhaseProgressing {
		t.Fatalf("after new revision: A/B routing %v, iterations %d, applied %s, phase %s", w.abOn, w.status.Iterations, w.status.LastAppliedSpec, w.status.Phase)
	}
	w.runUntil(t, 50, sluicev1.CanaryPhaseSucceeded)
	if w.primaryRevision != "rev-3" || w.status.Iterations != 5 {
		t.Fatalf("primary runs %s after %d iterations, want rev-3 after 5", w.primaryRevision, w.status.Iterations)
	}
	golden.Assert(t, "ab-new-revision-restarts", w.log)
}

// Failed checks below the threshold are not iterations: 5 passing checks are still needed.
func TestABFailedChecksAreNotIterations(t *testing.T) {
	for _, mode := range []string{"Total", "Consecutive"} {
		t.Run(mode, func(t *testing.T) {
			spec := abSpec()
			spec.Analysis.FailedChecksMode = mode
			w := newWorld(spec)
			checks := 0
			w.analysis = countingChecks(t, &checks, 2, 4)
			w.initialized(t)
			w.targetRevision = "rev-2"
			w.runUntil(t, 50, sluicev1.CanaryPhaseSucceeded)
			wantFailed := map[string]int32{"Total": 2, "Consecutive": 0}[mode]
			if checks != 7 || w.status.Iterations != 5 || w.status.FailedChecks != wantFailed {
				t.Fatalf("checks %d, iterations %d, failed %d; want 7, 5, %d\n%s", checks, w.status.Iterations, w.status.FailedChecks,
					wantFailed, strings.Join(w.log, "\n"))
			}
		})
	}
}

// No A/B routing before the pre-rollout webhooks pass; their failures count as failed checks.
func TestABPreRolloutGate(t *testing.T) {
	spec := abSpec()
	spec.Analysis.Webhooks = []sluicev1.CanaryWebhook{{Name: "smoke", Type: sluicev1.WebhookPreRollout, URL: "http://hook/"},
		{Name: "load", Type: sluicev1.WebhookConfirmTrafficIncrease, URL: "http://hook/"}}
	w := newWorld(spec)
	w.analysis = passing
	calls := 0
	w.gates = func(gt sluicev1.WebhookType, w *world) GateResult {
		if gt != sluicev1.WebhookPreRollout {
			t.Fatalf("gate %s asked in an A/B run", gt)
		}
		calls++
		if w.abOn {
			t.Fatal("pre-rollout asked with A/B routing on")
		}
		return GateResult{Passed: calls > 2, Message: "500 Internal Server Error"}
	}
	w.initialized(t)
	w.targetRevision = "rev-2"
	w.runUntil(t, 60, sluicev1.CanaryPhaseSucceeded)
	if calls != 3 || w.status.FailedChecks != 2 {
		t.Fatalf("pre-rollout calls %d, failed checks %d; want 3 and 2", calls, w.status.FailedChecks)
	}
}

// The confirm-promotion gate is asked with the last check; while it refuses, checks go on and
// the iterations stay at their number.
func TestABConfirmPromotion(t *testing.T) {
	spec := abSpec()
	spec.Analysis.Webhooks = []sluicev1.CanaryWebhook{{Name: "approve", Type: sluicev1.WebhookConfirmPromotion, URL: "http://hook/"}}
	w := newWorld(spec)
	w.analysis = passing
	approved, asked := false, 0
	w.gates = func(gt sluicev1.WebhookType, w *world) GateResult {
		asked++
		if w.status.Iterations < 4 {
			t.Fatalf("confirm-promotion asked at iteration %d of 5", w.status.Iterations)
		}
		return GateResult{Passed: approved, Message: "403 Forbidden"}
	}
	w.initialized(t)
	w.targetRevision = "rev-2"
	w.runUntil(t, 50, sluicev1.CanaryPhaseWaitingPromotion)
	for i := 0; i < 3; i++ {
		w.tick(t)
	}
	if w.status.Phase != sluicev1.CanaryPhaseWaitingPromotion || w.status.Iterations != 5 || !w.abOn {
		t.Fatalf("while refused: phase %s, iterations %d, A/B routing %v", w.status.Phase, w.status.Iterations, w.abOn)
	}
	approved = true
	w.runUntil(t, 10, sluicev1.CanaryPhaseSucceeded)
	if asked != 5 {
		t.Fatalf("gate asked %d times, want 5 (once at the fifth check, then once per check while waiting)", asked)
	}
}

func TestABGatesAndAnalysisDue(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	spec := abSpec()
	for _, typ := range []sluicev1.WebhookType{sluicev1.WebhookPreRollout, sluicev1.WebhookConfirmTrafficIncrease,
		sluicev1.WebhookRollout, sluicev1.WebhookRollback, sluicev1.WebhookConfirmPromotion} {
		spec.Analysis.Webhooks = append(spec.Analysis.Webhooks, sluicev1.CanaryWebhook{Name: string(typ), Type: typ, URL: "http://hook/"})
	}
	ready := Workload{Exists: true, RolledOut: true, Desired: 2, Ready: 2, Updated: 2, Revision: "rev-2"}
	o := func(phase sluicev1.CanaryPhase, on bool, iterations int32) Observed {
		primary := ready
		primary.Revision = "rev-1" // not promoted yet
		return Observed{Now: now, Spec: spec, Revision: "rev-2", Primary: primary, Canary: ready,
			Status: sluicev1.CanaryStatus{Phase: phase, LastAppliedSpec: "rev-2", LastPromotedSpec: "rev-1",
				PreRolloutPassed: on, Iterations: iterations, LastStepTime: stamp(now.Add(-time.Hour)), LastProgressTime: stamp(now)}}
	}
	for _, tt := range []struct {
		name     string
		o        Observed
		gates    []sluicev1.WebhookType
		analysis bool
	}{
		{"before the A/B routing: pre-rollout only", o(sluicev1.CanaryPhaseProgressing, false, 0), []sluicev1.WebhookType{sluicev1.WebhookPreRollout}, false},
		{"first check", o(sluicev1.CanaryPhaseProgressing, true, 0), []sluicev1.WebhookType{sluicev1.WebhookRollout, sluicev1.WebhookRollback}, true},
		{"last check", o(sluicev1.CanaryPhaseProgressing, true, 4), []sluicev1.WebhookType{sluicev1.WebhookRollout, sluicev1.WebhookRollback, sluicev1.WebhookConfirmPromotion}, true},
		{"waiting for promotion", o(sluicev1.CanaryPhaseWaitingPromotion, true, 5), []sluicev1.WebhookType{sluicev1.WebhookRollout, sluicev1.WebhookRollback, sluicev1.WebhookConfirmPromotion}, true},
		{"promoting", o(sluicev1.CanaryPhasePromoting, true, 5), nil, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := GatesDue(tt.o); !slices.Equal(got, tt.gates) {
				t.Errorf("GatesDue = %v, want %v", got, tt.gates)
			}
			if got := AnalysisDue(tt.o); got != tt.analysis {
				t.Errorf("AnalysisDue = %v, want %v", got, tt.analysis)
			}
		})
	}
}

func TestABDecideTable(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	ready := Workload{Exists: true, RolledOut: true, Desired: 2, Ready: 2, Updated: 2, Revision: "rev-2"}
	// base: an A/B run of rev-2 at check 2 of 5, A/B routing on, the next check not due yet.
	base := func() Observed {
		return Observed{Now: now, Spec: abSpec(), Revision: "rev-2", Primary: Workload{Exists: true, RolledOut: true, Desired: 2, Ready: 2, Updated: 2, Revision: "rev-1"},
			Canary: ready, RouteKnown: true, RouteABOn: true, RouteABKnown: true,
			Status: sluicev1.CanaryStatus{Phase: sluicev1.CanaryPhaseProgressing, LastAppliedSpec: "rev-2", LastPromotedSpec: "rev-1",
				PreRolloutPassed: true, Iterations: 2, LastStepTime: stamp(now.Add(-time.Second)), LastProgressTime: stamp(now)}}
	}
	tests := []struct {
		name      string
		mutate    func(*Observed)
		wantPhase sluicev1.CanaryPhase
		actions   []Action
		event     string
	}{
		{"steady A/B run does nothing", func(o *Observed) {}, sluicev1.CanaryPhaseProgressing, nil, ""},
		{"A/B rules removed by someone are put back", func(o *Observed) { o.RouteABOn = false },
			sluicev1.CanaryPhaseProgressing, []Action{ActionABRoutesOn}, EventABRoutesRestored},
		{"A/B rules are not put back to an unready canary", func(o *Observed) { o.RouteABOn, o.Canary.Ready = false, 0 },
			sluicev1.CanaryPhaseProgressing, nil, ""},
		{"A/B route unreadable: nothing to restore", func(o *Observed) { o.RouteABOn, o.RouteABKnown = false, false },
			sluicev1.CanaryPhaseProgressing, nil, ""},
		{"stray A/B rules after a run are removed", func(o *Observed) {
			o.Status.Phase, o.Status.LastPromotedSpec = sluicev1.CanaryPhaseSucceeded, "rev-2"
			o.Primary.Revision = "rev-2" // the run was promoted
			o.Canary = Workload{Exists: true, RolledOut: true, Revision: "rev-2"}
		}, sluicev1.CanaryPhaseSucceeded, []Action{ActionABRoutesOff}, EventABRoutesRestored},
		{"abort turns the A/B routing off before the scale-down", func(o *Observed) {
			o.Requests = map[string]string{sluicev1.AnnotationAbort: "now"}
		}, sluicev1.CanaryPhaseFailed, []Action{ActionABRoutesOff, ActionSetWeights, ActionScaleCanaryDown}, EventRollback},
		{"promote request keeps the A/B routing while the primary is updated", func(o *Observed) {
			o.Requests = map[string]string{sluicev1.AnnotationPromote: "now"}
		}, sluicev1.CanaryPhasePromoting, []Action{ActionPromotePrimary}, EventPromoting},
		{"promoted primary ready: A/B routing off, traffic on the primary, canary down, Succeeded", func(o *Observed) {
			o.Status.Phase, o.Status.Iterations, o.Primary.Revision = sluicev1.CanaryPhasePromoting, 5, "rev-2"
		}, sluicev1.CanaryPhaseSucceeded, []Action{ActionABRoutesOff, ActionSetWeights, ActionScaleCanaryDown}, EventSucceeded},
		{"progress deadline rolls back", func(o *Observed) {
			o.Status.LastProgressTime = stamp(now.Add(-time.Hour))
		}, sluicev1.CanaryPhaseFailed, []Action{ActionABRoutesOff, ActionSetWeights, ActionScaleCanaryDown}, EventRollback},
		{"revision back to the primary's cancels the run", func(o *Observed) { o.Revision = "rev-1" },
			sluicev1.CanaryPhaseSucceeded, []Action{ActionABRoutesOff, ActionSetWeights, ActionScaleCanaryDown}, EventRunCancelled},
		{"canary ready: the first step turns the A/B routing on", func(o *Observed) {
			o.Status.PreRolloutPassed, o.Status.Iterations, o.Status.LastStepTime, o.RouteABOn = false, 0, nil, false
		}, sluicev1.CanaryPhaseProgressing, []Action{ActionABRoutesOn}, EventABStarted},
		{"canary not ready: no A/B routing", func(o *Observed) {
			o.Status.PreRolloutPassed, o.Status.Iterations, o.Status.LastStepTime, o.RouteABOn = false, 0, nil, false
			o.Canary.Ready = 0
		}, sluicev1.CanaryPhaseProgressing, nil, ""},
		{"skipAnalysis promotes without A/B routing", func(o *Observed) {
			o.Status = sluicev1.CanaryStatus{Phase: sluicev1.CanaryPhaseSucceeded, LastAppliedSpec: "rev-1", LastPromotedSpec: "rev-1"}
			o.RouteABOn, o.Spec.SkipAnalysis = false, true
		}, sluicev1.CanaryPhasePromoting, []Action{ActionSetWeights, ActionScaleCanaryUp, ActionPromotePrimary}, EventPromoting},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := base()
			tt.mutate(&o)
			d := Decide(o)
			if d.Status.Phase != tt.wantPhase || d.Status.CanaryWeight != 0 || !slices.Equal(d.Actions, tt.actions) {
				t.Fatalf("got phase %s weight %d actions %v; want %s 0 %v", d.Status.Phase, d.Status.CanaryWeight, d.Actions, tt.wantPhase, tt.actions)
			}
			if tt.event != "" && !slices.ContainsFunc(d.Events, func(e planevent.Event) bool { return e.Reason == tt.event }) {
				t.Fatalf("events %+v, want one %s", d.Events, tt.event)
			}
		})
	}
}

// A spec without iterations, or without a match, runs with weights as before.
func TestIsAB(t *testing.T) {
	spec := abSpec()
	if !IsAB(spec) {
		t.Fatal("match and iterations: not an A/B run")
	}
	noIterations, noMatch := abSpec(), abSpec()
	noIterations.Analysis.Iterations = 0
	noMatch.Analysis.Match = nil
	if IsAB(noIterations) || IsAB(noMatch) {
		t.Fatal("an A/B run without iterations or without match")
	}
}
