package plan

import (
	"slices"
	"strings"
	"testing"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/internal/planevent"
	"sluice.dev/sluice/test/golden"
)

// blueGreenSpec is the seed's analysis as a Flagger blue/green run: 4 checks at weight 0, then
// everything at once.
func blueGreenSpec() sluicev1.CanarySpec {
	spec := seedSpec()
	spec.Analysis.StepWeight, spec.Analysis.MaxWeight = 0, 0
	spec.Analysis.Iterations = 4
	return spec
}

// countingBlueGreenChecks fails the checks numbered in failing (1-based), counts every check in
// *n, and fails the test when a check runs while the canary has traffic.
func countingBlueGreenChecks(t *testing.T, n *int, failing ...int) func(w *world) Check {
	return func(w *world) Check {
		*n++
		if w.routeWeight != 0 {
			t.Fatalf("check %d ran at weight %d: a blue/green run is analysed at 0", *n, w.routeWeight)
		}
		if slices.Contains(failing, *n) {
			return failingFrom(0)(w)
		}
		return passing(w)
	}
}

func TestGoldenBlueGreenSuccessfulRun(t *testing.T) {
	w := newWorld(blueGreenSpec())
	checks := 0
	w.analysis = countingBlueGreenChecks(t, &checks)
	w.initialized(t)
	w.targetRevision = "rev-2"
	var weights []int32
	for i := 0; i < 50 && w.status.Phase != sluicev1.CanaryPhaseSucceeded || i == 0; i++ {
		w.tick(t)
		if len(weights) == 0 || weights[len(weights)-1] != w.routeWeight {
			weights = append(weights, w.routeWeight)
		}
	}
	if w.status.Phase != sluicev1.CanaryPhaseSucceeded {
		t.Fatalf("phase %s", w.status.Phase)
	}
	if checks != 4 || w.status.Iterations != 4 {
		t.Errorf("checks %d, iterations %d; want 4 and 4", checks, w.status.Iterations)
	}
	if !slices.Equal(weights, []int32{0, 100, 0}) {
		t.Errorf("canary weights over the run %v, want 0, then 100 at once, then 0 on the promoted primary", weights)
	}
	if w.canaryReplicas != 0 || w.primaryRevision != "rev-2" {
		t.Errorf("after promotion: canary replicas %d, primary %s", w.canaryReplicas, w.primaryRevision)
	}
	golden.Assert(t, "bluegreen-successful-run", w.log)
}

func TestGoldenBlueGreenRollbackNeverSendsTraffic(t *testing.T) {
	w := newWorld(blueGreenSpec())
	checks := 0
	w.analysis = countingBlueGreenChecks(t, &checks, 2, 3, 4, 5, 6, 7)
	w.initialized(t)
	w.targetRevision = "rev-2"
	maxWeight := int32(0)
	for i := 0; i < 50 && w.status.Phase != sluicev1.CanaryPhaseFailed; i++ {
		w.tick(t)
		maxWeight = max(maxWeight, w.routeWeight)
	}
	if w.status.Phase != sluicev1.CanaryPhaseFailed || w.status.FailedChecks != 5 || w.status.Iterations != 1 {
		t.Fatalf("phase %s failed %d iterations %d; want Failed after 5 failed checks and 1 passing", w.status.Phase, w.status.FailedChecks, w.status.Iterations)
	}
	if maxWeight != 0 || w.canaryReplicas != 0 || w.primaryRevision != "rev-1" {
		t.Errorf("rollback: canary reached weight %d, canary replicas %d, primary %s", maxWeight, w.canaryReplicas, w.primaryRevision)
	}
	golden.Assert(t, "bluegreen-rollback", w.log)
}

func TestBlueGreenGates(t *testing.T) {
	spec := blueGreenSpec()
	spec.Analysis.Webhooks = []sluicev1.CanaryWebhook{
		{Name: "load", Type: sluicev1.WebhookRollout, URL: "http://loadtester/"},
		{Name: "approve", Type: sluicev1.WebhookConfirmPromotion, URL: "http://gate/"},
		{Name: "more", Type: sluicev1.WebhookConfirmTrafficIncrease, URL: "http://gate/"},
	}
	w := newWorld(spec)
	approved := false
	seen := map[sluicev1.WebhookType]int{}
	w.gates = func(gt sluicev1.WebhookType, w *world) GateResult {
		seen[gt]++
		if gt == sluicev1.WebhookConfirmPromotion {
			return GateResult{Passed: approved, Message: "approve webhook: HTTP 403"}
		}
		return GateResult{Passed: true}
	}
	w.analysis = passing
	w.initialized(t)
	w.targetRevision = "rev-2"
	w.runUntil(t, 50, sluicev1.CanaryPhaseWaitingPromotion)
	if w.routeWeight != 0 || w.status.Iterations != 4 {
		t.Fatalf("waiting for promotion at weight %d, iterations %d; want 0 and 4", w.routeWeight, w.status.Iterations)
	}
	for i := 0; i < 3; i++ {
		w.tick(t)
		if w.status.Phase != sluicev1.CanaryPhaseWaitingPromotion || w.routeWeight != 0 {
			t.Fatalf("the gate let the run through: phase %s weight %d", w.status.Phase, w.routeWeight)
		}
	}
	approved = true
	w.runUntil(t, 20, sluicev1.CanaryPhaseSucceeded)
	if seen[sluicev1.WebhookConfirmTrafficIncrease] != 0 {
		t.Errorf("confirm-traffic-increase called %d times in a blue/green run", seen[sluicev1.WebhookConfirmTrafficIncrease])
	}
	if seen[sluicev1.WebhookRollout] < 4 {
		t.Errorf("rollout webhooks called %d times, want every check", seen[sluicev1.WebhookRollout])
	}
}

func TestBlueGreenNewRevisionRestarts(t *testing.T) {
	w := newWorld(blueGreenSpec())
	w.analysis = passing
	w.initialized(t)
	w.targetRevision = "rev-2"
	for w.status.Iterations < 2 {
		w.tick(t)
	}
	w.targetRevision = "rev-3"
	d := w.tick(t)
	if w.status.Iterations != 0 || w.status.LastAppliedSpec != "rev-3" || w.routeWeight != 0 ||
		!slices.ContainsFunc(d.Events, func(e planevent.Event) bool { return e.Reason == EventRestarted }) {
		t.Fatalf("after a new revision: iterations %d, applied %s, weight %d, events %+v", w.status.Iterations, w.status.LastAppliedSpec, w.routeWeight, d.Events)
	}
	w.runUntil(t, 50, sluicev1.CanaryPhaseSucceeded)
	if w.primaryRevision != "rev-3" {
		t.Fatalf("primary %s, want rev-3", w.primaryRevision)
	}
}

func TestBlueGreenPromoteRequestSwitchesFirst(t *testing.T) {
	w := newWorld(blueGreenSpec())
	w.analysis = passing
	w.initialized(t)
	w.targetRevision = "rev-2"
	for w.status.Iterations < 1 {
		w.tick(t)
	}
	w.requests = map[string]string{sluicev1.AnnotationPromote: "2026-11-30T12:10:00Z"}
	d := w.tick(t)
	if w.status.Phase != sluicev1.CanaryPhasePromoting || w.routeWeight != 100 ||
		!slices.Equal(d.Actions, []Action{ActionSetWeights, ActionPromotePrimary}) {
		t.Fatalf("promote request: phase %s weight %d actions %v; want the switch to the canary, then the promotion", w.status.Phase, w.routeWeight, d.Actions)
	}
	w.runUntil(t, 20, sluicev1.CanaryPhaseSucceeded)
	if w.routeWeight != 0 || w.primaryRevision != "rev-2" {
		t.Fatalf("after promotion: weight %d, primary %s", w.routeWeight, w.primaryRevision)
	}
}

// TestBlueGreenPrimaryScaledBeforeTakeOver: the canary's autoscaler took it to 6 replicas under
// all the traffic while the primary ran 3; the primary is scaled to 6 and ready before the
// traffic moves back to it.
func TestBlueGreenPrimaryScaledBeforeTakeOver(t *testing.T) {
	w := newWorld(blueGreenSpec())
	w.analysis = passing
	w.primaryReplicas = 3
	w.initialized(t)
	w.targetRevision = "rev-2"
	for w.routeWeight != 100 {
		w.tick(t)
	}
	w.canaryReplicas = 6 // the canary's HPA under 100 % of the traffic
	scaled := false
	for i := 0; i < 20 && w.status.Phase != sluicev1.CanaryPhaseSucceeded; i++ {
		d := w.tick(t)
		if d.Has(ActionScalePrimaryUp) {
			scaled = true
			if d.PrimaryReplicas != 6 || d.Status.CanaryWeight != 100 {
				t.Fatalf("scale-up to %d at weight %d", d.PrimaryReplicas, d.Status.CanaryWeight)
			}
		}
	}
	if !scaled || w.primaryReplicas != 6 || w.status.Phase != sluicev1.CanaryPhaseSucceeded {
		t.Fatalf("primary scaled %v to %d, phase %s", scaled, w.primaryReplicas, w.status.Phase)
	}
}

// TestBlueGreenCanaryWeightFoundMidIterationsIsPutBack (findings16b F13): during the analysed
// iterations of a blue/green run the route (or, with provider kubernetes, the apex Service)
// is found sending everything to the canary, as after a GitOps tool re-applied the Service with
// its original selector. That is never a lost step of Sluice's own (a blue/green run only moves
// traffic with the promotion): the route is put back to 0 in the same tick with a WeightsRestored
// warning, the status stays at 0, and the iterations go on at 0, whether the checks then pass
// (promotion after the remaining iterations) or fail (rollback, the canary never carried traffic
// by Sluice's decision).
func TestBlueGreenCanaryWeightFoundMidIterationsIsPutBack(t *testing.T) {
	for _, failing := range []bool{false, true} {
		w := newWorld(blueGreenSpec())
		checks := 0
		if failing {
			w.analysis = func(w *world) Check { checks++; return failingFrom(0)(w) }
		} else {
			w.analysis = func(w *world) Check { checks++; return passing(w) }
		}
		w.initialized(t)
		w.targetRevision = "rev-2"
		for i := 0; i < 20 && checks < 1; i++ {
			w.tick(t)
		}
		if w.status.Phase != sluicev1.CanaryPhaseProgressing || w.routeWeight != 0 {
			t.Fatalf("after the first check: %s at route weight %d", w.status.Phase, w.routeWeight)
		}
		w.routeWeight = 100 // the Service re-applied as it is in Git: it selects the canary's pods
		d := w.tick(t)
		if hasReason(d.Events, EventWriteRecovered) || !hasReason(d.Events, EventWeightsDrift) {
			t.Fatalf("failing=%t: canary weight 100 mid-iterations gave events %v, want WeightsRestored and no LostWriteRecovered", failing, d.Events)
		}
		if w.routeWeight != 0 || w.status.CanaryWeight != 0 {
			t.Fatalf("failing=%t: route %d, status weight %d after the tick; want both 0", failing, w.routeWeight, w.status.CanaryWeight)
		}
		want := sluicev1.CanaryPhaseSucceeded
		if failing {
			want = sluicev1.CanaryPhaseFailed
		}
		for i := 0; i < 80 && w.status.Phase != want; i++ {
			w.tick(t)
			if w.status.Phase == sluicev1.CanaryPhaseProgressing && w.routeWeight != 0 {
				t.Fatalf("failing=%t: route weight %d during the iterations\n%s", failing, w.routeWeight, strings.Join(w.log, "\n"))
			}
		}
		if w.status.Phase != want {
			t.Fatalf("failing=%t: phase %s, want %s\n%s", failing, w.status.Phase, want, strings.Join(w.log, "\n"))
		}
		if !failing && w.status.Iterations != 4 {
			t.Fatalf("promoted after %d iterations, want 4", w.status.Iterations)
		}
	}
}

func hasReason(events []planevent.Event, reason string) bool {
	return slices.ContainsFunc(events, func(e planevent.Event) bool { return e.Reason == reason })
}
