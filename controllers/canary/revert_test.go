package canary

import (
	"strings"
	"testing"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// TestRevertOnDeletionAfterRollbackWarns deletes a Canary with revertOnDeletion after its run
// rolled back: the target (running the failed revision) takes the traffic back, as asked, and a
// Warning names the Deployment, the rolled-back revision and the promoted one. Deleting a Canary
// whose target runs the promoted revision gives no such Warning.
func TestRevertOnDeletionAfterRollbackWarns(t *testing.T) {
	h := newHarness(t)
	h.analyzer.fail = func(int32) bool { return true }
	h.app(2, "1")
	c := h.canaryFor()
	c.Spec.RevertOnDeletion = true
	h.create(c)
	h.runUntil(sluicev1.CanaryPhaseInitialized, 10)
	promoted := h.canary().Status.LastPromotedSpec
	h.setImage("2-bad")
	h.runUntil(sluicev1.CanaryPhaseFailed, 60)
	failed := h.canary().Status.LastAppliedSpec
	if failed == promoted || failed == "" {
		t.Fatalf("lastAppliedSpec %q, lastPromotedSpec %q", failed, promoted)
	}
	h.events.drain()
	h.deleteAndFinalize()
	h.assertTargetServes(2)
	var warned []string
	for _, e := range h.events.drain() {
		if strings.HasPrefix(e, "["+sluicev1.ReasonRevertToUnpromoted+"]") {
			warned = append(warned, e)
		}
	}
	if len(warned) != 1 {
		t.Fatalf("want one %s event, got %q", sluicev1.ReasonRevertToUnpromoted, warned)
	}
	for _, want := range []string{"Deployment podinfo", "rolled back", failed, promoted} {
		if !strings.Contains(warned[0], want) {
			t.Fatalf("warning %q does not name %q", warned[0], want)
		}
	}

	h = newHarness(t)
	h.app(2, "1")
	c = h.canaryFor()
	c.Spec.RevertOnDeletion = true
	h.create(c)
	h.runUntil(sluicev1.CanaryPhaseInitialized, 10)
	h.events.drain()
	h.deleteAndFinalize()
	h.assertTargetServes(2)
	for _, e := range h.events.drain() {
		if strings.Contains(e, sluicev1.ReasonRevertToUnpromoted) {
			t.Fatalf("warning for a target on the promoted revision: %s", e)
		}
	}
}
