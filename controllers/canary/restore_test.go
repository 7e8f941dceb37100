package canary

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
	// A Secret too: both kinds of copies are restored.
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "podinfo-token", Namespace: h.ns},
		Data: map[string][]byte{"token": []byte("v1")}}
	if err := h.c.Create(h.ctx, secret); err != nil {
		t.Fatal(err)
	}
	d := h.deployment("podinfo")
	d.Spec.Template.Spec.Containers[0].EnvFrom = append(d.Spec.Template.Spec.Containers[0].EnvFrom,
		corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "podinfo-token"}}})
	if err := h.c.Update(h.ctx, d); err != nil {
		t.Fatal(err)
	}
	primaryToken := func() string {
		s := &corev1.Secret{}
		if err := h.c.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: "podinfo-token-primary"}, s); err != nil {
			t.Fatalf("reading podinfo-token-primary: %v", err)
		}
		return string(s.Data["token"])
	}
	c := h.canaryFor()
	c.Spec.Analysis.StepWeightPromotion = 10
	c.Spec.Analysis.Threshold = 2
	h.create(c)
	h.runUntil(sluicev1.CanaryPhaseInitialized, 10)
	promoted := h.canary().Status.LastPromotedSpec
	h.setImage("6.0.1")
	h.setConfig("v2")
	secret.Data["token"] = []byte("v2")
	if err := h.c.Update(h.ctx, secret); err != nil {
		t.Fatal(err)
	}
	h.runUntil(sluicev1.CanaryPhasePromoting, 40)
	for i := 0; i < 5 && h.primaryConfigMode() != "v2"; i++ {
		h.tick()
	}
	if m := h.primaryConfigMode(); m != "v2" || primaryToken() != "v2" || h.restorePoints() != 1 {
		t.Fatalf("promotion: primary config %s, token %s, %d ConfigMap restore points; want v2, v2 and 1", m, primaryToken(), h.restorePoints())
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
	if tok := primaryToken(); tok != "v1" {
		t.Fatalf("after the rollback the primary's Secret copy holds %q, want v1", tok)
	}
	if n := h.restorePoints(); n != 0 {
		t.Fatalf("%d restore points left after the rollback settled", n)
	}
	if err := h.c.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: "podinfo-token-primary" + restoreSuffix}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the Secret's restore point is left after the rollback settled (%v)", err)
	}
}

// TestImageOnlyPromotionTakesNoRestorePoint: a release that changes only the image leaves the
// -primary config copies as they are, so its promotion keeps no restore point for them (no
// requests for them); a rollback during Promoting still returns the primary whole: the old image
// and the untouched copy.
func TestImageOnlyPromotionTakesNoRestorePoint(t *testing.T) {
	h := newHarness(t)
	h.app(2, "6.0.0")
	c := h.canaryFor()
	c.Spec.Analysis.StepWeightPromotion = 10
	c.Spec.Analysis.Threshold = 2
	h.create(c)
	h.runUntil(sluicev1.CanaryPhaseInitialized, 10)
	promoted := h.canary().Status.LastPromotedSpec
	before := h.primaryConfigMode()
	h.setImage("6.0.1")
	h.runUntil(sluicev1.CanaryPhasePromoting, 40)
	for i := 0; i < 5 && !strings.HasSuffix(h.deployment("podinfo-primary").Spec.Template.Spec.Containers[0].Image, ":6.0.1"); i++ {
		h.tick()
	}
	if img := h.deployment("podinfo-primary").Spec.Template.Spec.Containers[0].Image; !strings.HasSuffix(img, ":6.0.1") {
		t.Fatalf("primary not promoted: %s", img)
	}
	if n := h.restorePoints(); n != 0 || h.primaryConfigMode() != before {
		t.Fatalf("image-only promotion: %d restore points, copy %q (was %q); want none and unchanged", n, h.primaryConfigMode(), before)
	}
	h.analyzer.mu.Lock()
	h.analyzer.failIn = sluicev1.CanaryPhasePromoting
	h.analyzer.mu.Unlock()
	h.runUntil(sluicev1.CanaryPhaseFailed, 20)
	for i := 0; i < 3; i++ {
		h.tick()
	}
	primary := h.deployment("podinfo-primary")
	if img := primary.Spec.Template.Spec.Containers[0].Image; !strings.HasSuffix(img, ":6.0.0") || primary.Annotations[AnnotationRevision] != promoted {
		t.Fatalf("after the rollback the primary runs %s at %s, want 6.0.0 at %s", img, primary.Annotations[AnnotationRevision], promoted)
	}
	if m := h.primaryConfigMode(); m != before {
		t.Fatalf("after the rollback the config copy holds %q, want %q", m, before)
	}
}
