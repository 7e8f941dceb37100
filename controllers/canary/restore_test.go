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

// TestRollbackAfterPromotionRestoresConfigs: a release that changes the image and the mounted
// ConfigMap is promoted (the primary and its -primary copy get the new data), then fails during
// Promoting: the rollback returns the primary whole to the last promoted revision — template and
// config copy — and removes the restore point once it is no longer needed.
func TestRollbackAfterPromotionRestoresConfigs(t *testing.T) {
	h := newHarness(t)
	h.app(2, "6.0.0")
	c := h.canaryFor()
	c.Spec.Analysis.StepWeightPromotion = 10
	c.Spec.Analysis.Threshold = 2
	h.create(c)
	h.runUntil(sluicev1.CanaryPhaseInitialized, 10)
	promoted := h.canary().Status.LastPromotedSpec
	h.setImage("6.0.1")
	h.setConfig("v2")
	h.runUntil(sluicev1.CanaryPhasePromoting, 40)
	for i := 0; i < 5 && h.primaryConfigMode() != "v2"; i++ {
		h.tick()
	}
	if m := h.primaryConfigMode(); m != "v2" || h.restorePoints() != 1 {
		t.Fatalf("promotion: primary config %s, %d restore points; want v2 and 1", m, h.restorePoints())
	}
	h.analyzer.mu.Lock()
	h.analyzer.failIn = sluicev1.CanaryPhasePromoting
	h.analyzer.mu.Unlock()
	h.runUntil(sluicev1.CanaryPhaseFailed, 20)
	for i := 0; i < 3; i++ {
		h.tick()
	}
	primary := h.deployment("podinfo-primary")
	if img := primary.Spec.Template.Spec.Containers[0].Image; !strings.HasSuffix(img, ":6.0.0") ||
		primary.Annotations[AnnotationRevision] != promoted || h.canary().Status.LastPromotedSpec != promoted {
		t.Fatalf("primary runs %s at %s, want 6.0.0 at %s", img, primary.Annotations[AnnotationRevision], promoted)
	}
	if m := h.primaryConfigMode(); m != "v1" {
		t.Fatalf("after the rollback the primary's config copy holds %q, want v1 (the promoted revision's)\n%s", m, strings.Join(h.log, "\n"))
	}
	if n := h.restorePoints(); n != 0 {
		t.Fatalf("%d restore points left after the rollback settled", n)
	}
}
