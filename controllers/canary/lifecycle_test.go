package canary

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/test/golden"
)

// primaryMatchesTarget reports whether the primary runs the target's template (modulo the
// -primary label values and config names).
func (h *harness) primaryMatchesTarget() bool {
	h.t.Helper()
	target, primary := h.deployment("podinfo"), h.deployment("podinfo-primary")
	want, err := primaryTemplate(deployment{target}, configRefs(&target.Spec.Template.Spec))
	if err != nil {
		h.t.Fatal(err)
	}
	return equality.Semantic.DeepEqual(want, primary.Spec.Template)
}

// bothProviders runs a scenario on the Gateway API and the Istio provider; golden logs are shared,
// so both must tell the same story.
func bothProviders(t *testing.T, f func(t *testing.T, h *harness)) {
	for _, p := range []sluicev1.Provider{sluicev1.ProviderGatewayAPI, sluicev1.ProviderIstio} {
		t.Run(string(p), func(t *testing.T) { f(t, newHarnessFor(t, p)) })
	}
}

func TestGoldenSuccessfulRollout(t *testing.T) { bothProviders(t, goldenSuccessfulRollout) }

func goldenSuccessfulRollout(t *testing.T, h *harness) {
	h.app(3, "6.0.0")
	h.create(h.canaryFor())
	h.runUntil(sluicev1.CanaryPhaseInitialized, 10)
	if got := *h.deployment("podinfo").Spec.Replicas; got != 0 {
		t.Fatalf("target not scaled to zero after initialization: %d", got)
	}
	if got := *h.deployment("podinfo-primary").Spec.Replicas; got != 3 {
		t.Fatalf("primary replicas %d, want 3", got)
	}

	h.setImage("6.0.1")
	var weights []int32
	for i := 0; i < 40 && h.last.Phase != sluicev1.CanaryPhaseSucceeded; i++ {
		h.tick()
		w := h.routeWeights()
		if w.Primary+w.Canary != 100 {
			t.Fatalf("route weights %d/%d do not sum to 100", w.Primary, w.Canary)
		}
		if h.last.Phase == sluicev1.CanaryPhaseProgressing && (len(weights) == 0 || weights[len(weights)-1] != w.Canary) {
			weights = append(weights, w.Canary)
		}
		if h.last.Phase == sluicev1.CanaryPhaseSucceeded && !h.primaryMatchesTarget() {
			t.Fatal("Succeeded before the primary runs the canary's template")
		}
	}
	if h.last.Phase != sluicev1.CanaryPhaseSucceeded {
		t.Fatalf("not promoted:\n%s", strings.Join(h.log, "\n"))
	}
	if !slices.Equal(weights, []int32{0, 10, 20, 30, 40, 50}) {
		t.Fatalf("weights %v, want 0..50 by 10", weights)
	}
	if img := h.deployment("podinfo-primary").Spec.Template.Spec.Containers[0].Image; !strings.HasSuffix(img, ":6.0.1") {
		t.Fatalf("primary image %s after promotion", img)
	}
	c := h.canary()
	if c.Status.LastPromotedSpec != c.Status.LastAppliedSpec || len(c.Status.Analysis) == 0 {
		t.Fatalf("status after promotion: %+v", c.Status)
	}
	golden.Assert(t, "envtest-successful-rollout", h.log)
}

func TestGoldenRollbackAfterFiveFailedChecks(t *testing.T) { bothProviders(t, goldenRollback) }

func goldenRollback(t *testing.T, h *harness) {
	h.analyzer.fail = func(w int32) bool { return w >= 20 }
	h.app(2, "6.0.0")
	h.create(h.canaryFor())
	h.runUntil(sluicev1.CanaryPhaseInitialized, 10)
	h.setImage("6.0.1-bad")
	h.runUntil(sluicev1.CanaryPhaseFailed, 40)

	c := h.canary()
	if c.Status.FailedChecks != 5 || c.Status.CanaryWeight != 0 {
		t.Fatalf("after rollback: failed=%d weight=%d", c.Status.FailedChecks, c.Status.CanaryWeight)
	}
	if w := h.routeWeights(); w.Primary != 100 || w.Canary != 0 {
		t.Fatalf("route after rollback %d/%d", w.Primary, w.Canary)
	}
	if got := *h.deployment("podinfo").Spec.Replicas; got != 0 {
		t.Fatalf("canary not scaled down: %d", got)
	}
	if img := h.deployment("podinfo-primary").Spec.Template.Spec.Containers[0].Image; !strings.HasSuffix(img, ":6.0.0") {
		t.Fatalf("primary changed to %s", img)
	}
	promoted := findCondition(c, sluicev1.ConditionPromoted)
	if promoted == nil || promoted.Status != "False" || !strings.Contains(promoted.Message, "request-success-rate") {
		t.Fatalf("Promoted condition does not explain the rollback: %+v", promoted)
	}
	before := h.analyzer.Calls()
	for i := 0; i < 5; i++ {
		h.tick()
	}
	if h.analyzer.Calls() != before || h.last.Phase != sluicev1.CanaryPhaseFailed {
		t.Fatal("a failed canary ran analysis again or changed phase without a new revision")
	}
	golden.Assert(t, "envtest-rollback", h.log)
}

func TestWeightPlansOnAPIServer(t *testing.T) {
	for _, tt := range []struct {
		name string
		set  func(*sluicev1.CanaryAnalysis)
		want []int32
	}{
		{"15-61", func(a *sluicev1.CanaryAnalysis) { a.StepWeight, a.MaxWeight = 15, 61 }, []int32{0, 15, 30, 45, 60, 61}},
		{"7-50", func(a *sluicev1.CanaryAnalysis) { a.StepWeight, a.MaxWeight = 7, 50 }, []int32{0, 7, 14, 21, 28, 35, 42, 49, 50}},
		{"30-100", func(a *sluicev1.CanaryAnalysis) { a.StepWeight, a.MaxWeight = 30, 100 }, []int32{0, 30, 60, 90, 100}},
		{"list-1-2-10-80", func(a *sluicev1.CanaryAnalysis) {
			a.StepWeight, a.MaxWeight, a.StepWeights = 0, 0, []int32{1, 2, 10, 80}
		},
			[]int32{0, 1, 2, 10, 80}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.app(1, "1")
			c := seedCanary(h.ns)
			tt.set(&c.Spec.Analysis)
			h.create(c)
			h.runUntil(sluicev1.CanaryPhaseInitialized, 10)
			h.setImage("2")
			var weights []int32
			for i := 0; i < 40 && h.last.Phase != sluicev1.CanaryPhaseSucceeded; i++ {
				h.tick()
				w := h.routeWeights()
				if w.Primary+w.Canary != 100 {
					t.Fatalf("weights %d/%d", w.Primary, w.Canary)
				}
				if h.last.Phase == sluicev1.CanaryPhaseProgressing && (len(weights) == 0 || weights[len(weights)-1] != w.Canary) {
					weights = append(weights, w.Canary)
				}
				if h.last.Phase == sluicev1.CanaryPhaseSucceeded && !h.primaryMatchesTarget() {
					t.Fatal("Succeeded before the primary's template equals the canary's")
				}
			}
			if !slices.Equal(weights, tt.want) || h.last.Phase != sluicev1.CanaryPhaseSucceeded {
				t.Fatalf("weights %v (phase %s), want %v", weights, h.last.Phase, tt.want)
			}
		})
	}
}

func TestConfigMapChangeStartsRun(t *testing.T) {
	h := newHarness(t)
	h.app(1, "1")
	h.create(seedCanary(h.ns))
	h.runUntil(sluicev1.CanaryPhaseInitialized, 10)
	primaryCM := &corev1.ConfigMap{}
	if err := h.c.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: "podinfo-config-primary"}, primaryCM); err != nil {
		t.Fatalf("primary config copy missing: %v", err)
	}
	if ref := h.deployment("podinfo-primary").Spec.Template.Spec.Containers[0].EnvFrom[0].ConfigMapRef.Name; ref != "podinfo-config-primary" {
		t.Fatalf("primary references %s", ref)
	}
	// Nothing changes: ticks stay quiet.
	h.tick()
	if h.last.Phase != sluicev1.CanaryPhaseInitialized {
		t.Fatalf("phase %s without a change", h.last.Phase)
	}
	cm := &corev1.ConfigMap{}
	if err := h.c.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: "podinfo-config"}, cm); err != nil {
		t.Fatal(err)
	}
	cm.Data["mode"] = "v2"
	if err := h.c.Update(h.ctx, cm); err != nil {
		t.Fatal(err)
	}
	h.tick()
	if h.last.Phase != sluicev1.CanaryPhaseProgressing {
		t.Fatalf("a ConfigMap change did not start a run: phase %s", h.last.Phase)
	}
	h.runUntil(sluicev1.CanaryPhaseSucceeded, 40)
	if err := h.c.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: "podinfo-config-primary"}, primaryCM); err != nil || primaryCM.Data["mode"] != "v2" {
		t.Fatalf("promotion did not copy the config: %v %v", primaryCM.Data, err)
	}
}

func TestRevisionBackToPrimaryCancelsRun(t *testing.T) {
	h := newHarness(t)
	h.app(2, "1")
	h.create(seedCanary(h.ns))
	h.runUntil(sluicev1.CanaryPhaseInitialized, 10)
	promoted := h.canary().Status.LastPromotedSpec
	h.setImage("2")
	for h.last.CanaryWeight < 20 {
		h.tick()
	}
	h.setImage("1")
	h.tick()
	c := h.canary()
	if c.Status.Phase != sluicev1.CanaryPhaseSucceeded || c.Status.CanaryWeight != 0 || c.Status.LastAppliedSpec != promoted {
		t.Fatalf("after reverting the target: phase %s weight %d applied %s (promoted %s)",
			c.Status.Phase, c.Status.CanaryWeight, c.Status.LastAppliedSpec, promoted)
	}
	if w := h.routeWeights(); w.Canary != 0 {
		t.Fatalf("route still sends %d%% to the canary", w.Canary)
	}
	if got := *h.deployment("podinfo").Spec.Replicas; got != 0 {
		t.Fatalf("canary not scaled down: %d", got)
	}
}

func findCondition(c *sluicev1.Canary, typ string) *metav1.Condition {
	for i := range c.Status.Conditions {
		if c.Status.Conditions[i].Type == typ {
			return &c.Status.Conditions[i]
		}
	}
	return nil
}

// TestDeletedPrimaryIsNotRebuiltFromAnUnanalysedTarget deletes the primary mid-run: the Canary
// stalls (PrimaryMissing) instead of promoting the canary's revision; once the target is set back
// to the promoted version, the primary is rebuilt from it.
func TestDeletedPrimaryIsNotRebuiltFromAnUnanalysedTarget(t *testing.T) {
	h := newHarness(t)
	h.app(2, "1")
	h.create(seedCanary(h.ns))
	h.runUntil(sluicev1.CanaryPhaseInitialized, 10)
	promoted := h.canary().Status.LastPromotedSpec
	h.setImage("2-untested")
	for h.last.CanaryWeight < 10 {
		h.tick()
	}
	if err := h.c.Delete(h.ctx, h.deployment("podinfo-primary")); err != nil {
		t.Fatal(err)
	}
	h.tick()
	c := h.canary()
	stalled := findCondition(c, sluicev1.ConditionStalled)
	if stalled == nil || stalled.Reason != sluicev1.ReasonPrimaryMissing || c.Status.LastPromotedSpec != promoted {
		t.Fatalf("after deleting the primary: stalled %+v, lastPromotedSpec %s (was %s)", stalled, c.Status.LastPromotedSpec, promoted)
	}
	if err := h.c.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: "podinfo-primary"}, &appsv1.Deployment{}); err == nil {
		t.Fatal("the primary was rebuilt from the unanalysed target")
	}
	h.setImage("1")
	h.runUntil(sluicev1.CanaryPhaseInitialized, 10)
	if img := h.deployment("podinfo-primary").Spec.Template.Spec.Containers[0].Image; !strings.HasSuffix(img, ":1") {
		t.Fatalf("primary rebuilt with %s", img)
	}
}

// TestTwoCanariesOneTarget: a second Canary of the same Deployment stalls with TargetConflict
// naming the first, which keeps working.
func TestTwoCanariesOneTarget(t *testing.T) {
	h := newHarness(t)
	h.app(1, "1")
	h.create(seedCanary(h.ns))
	h.runUntil(sluicev1.CanaryPhaseInitialized, 10)
	second := seedCanary(h.ns)
	second.Name = "podinfo-again"
	second.Spec.Service.Name = "podinfo-again"
	if err := h.c.Create(h.ctx, second); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ { // the first tick adds the finalizer
		if _, err := h.r.Reconcile(h.ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(second)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.c.Get(h.ctx, client.ObjectKeyFromObject(second), second); err != nil {
		t.Fatal(err)
	}
	cond := findCondition(second, sluicev1.ConditionStalled)
	if cond == nil || cond.Reason != sluicev1.ReasonTargetConflict || !strings.Contains(cond.Message, "canary podinfo") {
		t.Fatalf("second canary: %+v", cond)
	}
	h.tick()
	if h.last.Phase != sluicev1.CanaryPhaseInitialized || findCondition(h.canary(), sluicev1.ConditionStalled) != nil {
		t.Fatalf("first canary disturbed: %s", h.last.Phase)
	}
}
