package canary

import (
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// TestPauseWithTrafficKeepsChecking: `kubectl sluice pause` (spec.suspend) at weight 10 holds
// only the advance: the conditions say so, checks keep running every interval against the real
// apiserver, and a canary that starts failing is rolled back at the failed-check threshold.
func TestPauseWithTrafficKeepsChecking(t *testing.T) {
	h := newHarness(t)
	h.app(1, "1")
	h.create(seedCanary(h.ns))
	h.runUntil(sluicev1.CanaryPhaseInitialized, 10)
	h.setImage("2")
	for i := 0; i < 10 && h.last.CanaryWeight == 0; i++ {
		h.tick()
	}
	if h.last.CanaryWeight != 10 {
		t.Fatalf("weight %d, want 10\n%s", h.last.CanaryWeight, strings.Join(h.log, "\n"))
	}
	c := h.canary()
	patch := client.MergeFrom(c.DeepCopy())
	c.Spec.Suspend = true
	if err := h.c.Patch(h.ctx, c, patch); err != nil {
		t.Fatal(err)
	}
	// Paused with a passing canary: held at 10, checks go on.
	calls := h.analyzer.Calls()
	for i := 0; i < 4; i++ {
		h.tick()
	}
	got := h.canary()
	rec := findCondition(got, sluicev1.ConditionReconciling)
	if got.Status.CanaryWeight != 10 || h.analyzer.Calls()-calls < 2 || rec == nil || rec.Reason != sluicev1.ReasonSuspended ||
		!strings.Contains(rec.Message, "checks keep running") {
		t.Fatalf("paused: weight %d, %d checks, Reconciling %+v\n%s", got.Status.CanaryWeight, h.analyzer.Calls()-calls, rec, strings.Join(h.log, "\n"))
	}
	// The canary starts failing while paused.
	h.analyzer.mu.Lock()
	h.analyzer.fail = func(int32) bool { return true }
	h.analyzer.mu.Unlock()
	h.runUntil(sluicev1.CanaryPhaseFailed, 30)
	log := strings.Join(h.log, "\n")
	got = h.canary()
	if got.Status.FailedChecks != 5 || h.routeWeights().Canary != 0 || !strings.Contains(log, "[Suspended] Paused (spec.suspend) at canary weight 10") ||
		!strings.Contains(log, "failed checks threshold reached (5)") {
		t.Fatalf("failed %d, route %+v\n%s", got.Status.FailedChecks, h.routeWeights(), log)
	}
	if strings.Count(log, "[Suspended]") != 1 {
		t.Fatalf("the pause announced more than once:\n%s", log)
	}
}
