package plan

import (
	"slices"
	"strings"
	"testing"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/test/golden"
)

func withHooks(types ...sluicev1.WebhookType) sluicev1.CanarySpec {
	spec := seedSpec()
	for _, t := range types {
		spec.Analysis.Webhooks = append(spec.Analysis.Webhooks, sluicev1.CanaryWebhook{Name: string(t), Type: t, URL: "http://hook/"})
	}
	return spec
}

func TestGoldenPreRolloutFailsThenPasses(t *testing.T) {
	w := newWorld(withHooks(sluicev1.WebhookPreRollout))
	w.analysis = passing
	calls := 0
	w.gates = func(gt sluicev1.WebhookType, _ *world) GateResult {
		if gt != sluicev1.WebhookPreRollout {
			t.Fatalf("unexpected gate %s", gt)
		}
		calls++
		return GateResult{Passed: calls > 2, Message: "pre-rollout hook load-test: 500 Internal Server Error"}
	}
	w.initialized(t)
	w.targetRevision = "rev-2"
	w.runUntil(t, 60, sluicev1.CanaryPhaseSucceeded)
	if calls != 3 || w.status.FailedChecks != 2 || !w.status.PreRolloutPassed {
		t.Fatalf("pre-rollout calls %d, failed checks %d, passed %v", calls, w.status.FailedChecks, w.status.PreRolloutPassed)
	}
	if !slices.Equal(w.weightsSeen, []int32{0, 10, 20, 30, 40, 50}) {
		t.Fatalf("weights %v", w.weightsSeen)
	}
	golden.Assert(t, "pre-rollout-retried", w.log)
}

func TestPreRolloutFailingRollsBackBeforeAnyTraffic(t *testing.T) {
	w := newWorld(withHooks(sluicev1.WebhookPreRollout))
	w.gates = func(sluicev1.WebhookType, *world) GateResult { return GateResult{Message: "timed out after 10s"} }
	w.initialized(t)
	w.targetRevision = "rev-2"
	w.runUntil(t, 60, sluicev1.CanaryPhaseFailed)
	if w.status.FailedChecks != 5 || len(w.weightsSeen) != 1 || w.weightsSeen[0] != 0 {
		t.Fatalf("failed %d, weights %v", w.status.FailedChecks, w.weightsSeen)
	}
}

func TestRefusingGateWhileAnalysisFailsRollsBack(t *testing.T) {
	w := newWorld(withHooks(sluicev1.WebhookConfirmPromotion))
	// Analysis passes until the run waits at the gate, then fails while the gate keeps refusing.
	w.analysis = func(w *world) Check {
		if w.status.Phase == sluicev1.CanaryPhaseWaitingPromotion {
			return failingFrom(0)(w)
		}
		return passing(w)
	}
	w.gates = func(sluicev1.WebhookType, *world) GateResult { return GateResult{Message: "not approved"} }
	w.initialized(t)
	w.targetRevision = "rev-2"
	w.runUntil(t, 60, sluicev1.CanaryPhaseFailed)
	if w.status.FailedChecks != 5 || w.primaryRevision != "rev-1" || w.routeWeight != 0 {
		t.Fatalf("failed %d primary %s route %d", w.status.FailedChecks, w.primaryRevision, w.routeWeight)
	}
	golden.Assert(t, "gate-refusing-analysis-failing", w.log)
}

func TestConfirmPromotionWaitsThenPromotes(t *testing.T) {
	w := newWorld(withHooks(sluicev1.WebhookConfirmPromotion))
	w.analysis = passing
	approved := false
	w.gates = func(sluicev1.WebhookType, *world) GateResult {
		return GateResult{Passed: approved, Message: "403 Forbidden"}
	}
	w.initialized(t)
	w.targetRevision = "rev-2"
	w.runUntil(t, 60, sluicev1.CanaryPhaseWaitingPromotion)
	for i := 0; i < 3; i++ {
		w.tick(t)
		if w.status.Phase != sluicev1.CanaryPhaseWaitingPromotion || w.routeWeight != 50 {
			t.Fatalf("left the gate without approval: %s at %d", w.status.Phase, w.routeWeight)
		}
	}
	approved = true
	w.runUntil(t, 10, sluicev1.CanaryPhaseSucceeded)
	if w.primaryRevision != "rev-2" {
		t.Fatal("not promoted")
	}
}

func TestConfirmTrafficIncreaseHoldsEachStep(t *testing.T) {
	w := newWorld(withHooks(sluicev1.WebhookConfirmTrafficIncrease))
	w.analysis = passing
	asks := 0
	w.gates = func(sluicev1.WebhookType, *world) GateResult {
		asks++
		return GateResult{Passed: asks%2 == 0, Message: "busy"}
	}
	w.initialized(t)
	w.targetRevision = "rev-2"
	w.runUntil(t, 60, sluicev1.CanaryPhaseSucceeded)
	if !slices.Equal(w.weightsSeen, []int32{0, 10, 20, 30, 40, 50}) || asks != 10 {
		t.Fatalf("weights %v after %d asks (want each of 5 increases asked twice)", w.weightsSeen, asks)
	}
}

func TestConfirmRolloutHoldsTheRunInWaiting(t *testing.T) {
	w := newWorld(withHooks(sluicev1.WebhookConfirmRollout))
	w.analysis = passing
	open := false
	w.gates = func(sluicev1.WebhookType, *world) GateResult {
		return GateResult{Passed: open, Message: "change freeze"}
	}
	w.initialized(t)
	w.targetRevision = "rev-2"
	w.tick(t)
	w.tick(t)
	if w.status.Phase != sluicev1.CanaryPhaseWaiting || w.canaryReplicas != 0 {
		t.Fatalf("phase %s, canary replicas %d: want Waiting with no canary", w.status.Phase, w.canaryReplicas)
	}
	open = true
	w.runUntil(t, 60, sluicev1.CanaryPhaseSucceeded)
}

func TestRollbackWebhookRollsBack(t *testing.T) {
	w := newWorld(withHooks(sluicev1.WebhookRollback))
	w.analysis = passing
	w.gates = func(_ sluicev1.WebhookType, w *world) GateResult {
		return GateResult{Passed: w.status.CanaryWeight >= 30}
	}
	w.initialized(t)
	w.targetRevision = "rev-2"
	w.runUntil(t, 60, sluicev1.CanaryPhaseFailed)
	if !strings.Contains(strings.Join(w.log, "\n"), EventRollbackHook) {
		t.Fatalf("no rollback-hook event:\n%s", strings.Join(w.log, "\n"))
	}
}

func TestManualGateApprovedByPromoteRequest(t *testing.T) {
	spec := seedSpec()
	spec.Analysis.Webhooks = []sluicev1.CanaryWebhook{{Name: "approval", Type: sluicev1.WebhookConfirmPromotion, Manual: true}}
	w := newWorld(spec)
	w.analysis = passing
	w.gates = func(sluicev1.WebhookType, *world) GateResult {
		return GateResult{Message: "approval: waiting for kubectl sluice promote"}
	}
	w.initialized(t)
	w.targetRevision = "rev-2"
	w.runUntil(t, 60, sluicev1.CanaryPhaseWaitingPromotion)
	w.requests = map[string]string{sluicev1.AnnotationPromote: "2026-11-30T12:30:00Z"}
	w.runUntil(t, 10, sluicev1.CanaryPhaseSucceeded)
	if w.status.LastHandledRequests[sluicev1.AnnotationPromote] != "2026-11-30T12:30:00Z" {
		t.Fatalf("request not recorded: %v", w.status.LastHandledRequests)
	}
}
