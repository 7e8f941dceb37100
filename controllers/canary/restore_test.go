package canary

import (
	"strings"
	"testing"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// TestFailedCheckDuringPromotionRestoresThePrimary: with stepWeightPromotion the canary keeps a
// share while the promoted primary takes over; checks keep running on it, and when they fail past
// the threshold the run rolls back and the primary goes back to the last promoted revision.
func TestFailedCheckDuringPromotionRestoresThePrimary(t *testing.T) {
	h := newHarness(t)
	failing := false
	h.analyzer.fail = func(int32) bool { return failing }
	h.app(2, "6.0.0")
	c := h.canaryFor()
	c.Spec.Analysis.StepWeightPromotion = 10
	c.Spec.Analysis.Threshold = 2
	h.create(c)
	h.runUntil(sluicev1.CanaryPhaseInitialized, 10)
	h.setImage("6.0.1")
	h.runUntil(sluicev1.CanaryPhasePromoting, 40)
	for i := 0; i < 5 && !strings.HasSuffix(h.deployment("podinfo-primary").Spec.Template.Spec.Containers[0].Image, ":6.0.1"); i++ {
		h.tick()
	}
	if img := h.deployment("podinfo-primary").Spec.Template.Spec.Containers[0].Image; !strings.HasSuffix(img, ":6.0.1") {
		t.Fatalf("primary not promoted: %s", img)
	}
	failing = true
	h.runUntil(sluicev1.CanaryPhaseFailed, 20)
	for i := 0; i < 3; i++ {
		h.tick()
	}
	got := h.canary()
	primary := h.deployment("podinfo-primary")
	if img := primary.Spec.Template.Spec.Containers[0].Image; !strings.HasSuffix(img, ":6.0.0") ||
		primary.Annotations[AnnotationRevision] != got.Status.LastPromotedSpec {
		t.Fatalf("after the rollback the primary runs %s (revision %s), want 6.0.0 (%s)\n%s", img,
			primary.Annotations[AnnotationRevision], got.Status.LastPromotedSpec, strings.Join(h.log, "\n"))
	}
	if w := h.routeWeights(); w.Canary != 0 || got.Status.Phase != sluicev1.CanaryPhaseFailed {
		t.Fatalf("route %+v, phase %s", w, got.Status.Phase)
	}
	if !strings.Contains(strings.Join(h.log, "\n"), "restoring the primary") {
		t.Fatalf("the rollback does not say it restores the primary:\n%s", strings.Join(h.log, "\n"))
	}
}
