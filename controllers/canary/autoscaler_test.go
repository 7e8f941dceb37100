package canary

import (
	"strings"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// TestHPAPrimaryScaledBeforeTakeOver: the primary gets its own HPA; a blue/green run whose canary
// the HPA took to 6 replicas under all the traffic, while the primary ran 3, moves the traffic
// back only once the primary has 6 ready.
// podinfoHPA is the team's HPA of the target podinfo: 2–10 replicas on CPU.
func podinfoHPA(ns string) *autoscalingv2.HorizontalPodAutoscaler {
	return &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "podinfo", Namespace: ns},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "podinfo"},
			MinReplicas:    ptr.To[int32](2), MaxReplicas: 10,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: "cpu", Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](80)}}}},
		},
	}
}

func TestHPAPrimaryScaledBeforeTakeOver(t *testing.T) {
	h := newHarnessFor(t, sluicev1.ProviderKubernetes)
	h.app(3, "6.7.0")
	if err := h.c.Create(h.ctx, podinfoHPA(h.ns)); err != nil {
		t.Fatal(err)
	}
	c := h.blueGreenCanaryFor()
	c.Spec.AutoscalerRef = &sluicev1.AutoscalerReference{APIVersion: "autoscaling/v2", Kind: sluicev1.AutoscalerHPA, Name: "podinfo",
		PrimaryScalerReplicas: &sluicev1.ScalerReplicas{MinReplicas: ptr.To[int32](3)}}
	h.create(c)
	h.runUntil(sluicev1.CanaryPhaseInitialized, 20)

	primaryHPA := &autoscalingv2.HorizontalPodAutoscaler{}
	if err := h.c.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: "podinfo-primary"}, primaryHPA); err != nil {
		t.Fatalf("primary HPA: %v", err)
	}
	if ref := primaryHPA.Spec.ScaleTargetRef; ref.Name != "podinfo-primary" || ref.Kind != "Deployment" ||
		ptr.Deref(primaryHPA.Spec.MinReplicas, 0) != 3 || primaryHPA.Spec.MaxReplicas != 10 || len(primaryHPA.Spec.Metrics) != 1 {
		t.Fatalf("primary HPA spec %+v", primaryHPA.Spec)
	}

	h.setImage("6.7.1")
	for i := 0; i < 40 && h.last.CanaryWeight != 100; i++ {
		h.tick()
	}
	if h.last.CanaryWeight != 100 {
		t.Fatalf("never switched to the canary\n%s", strings.Join(h.log, "\n"))
	}
	target := h.deployment("podinfo")
	patch := client.MergeFrom(target.DeepCopy())
	target.Spec.Replicas = ptr.To[int32](6) // the canary's HPA under all the traffic
	if err := h.c.Patch(h.ctx, target, patch); err != nil {
		t.Fatal(err)
	}
	markDeploymentsRolledOut(t, h.c, h.ns)
	for i := 0; i < 40 && h.last.Phase != sluicev1.CanaryPhaseSucceeded; i++ {
		before := h.routeWeights()
		h.tick()
		if after := h.routeWeights(); before.Canary == 100 && after.Canary == 0 {
			if ready := h.deployment("podinfo-primary").Status.ReadyReplicas; ready < 6 {
				t.Fatalf("traffic moved to a primary with %d ready replicas from a canary with 6\n%s", ready, strings.Join(h.log, "\n"))
			}
		}
	}
	if h.last.Phase != sluicev1.CanaryPhaseSucceeded {
		t.Fatalf("phase %s\n%s", h.last.Phase, strings.Join(h.log, "\n"))
	}
	if r := ptr.Deref(h.deployment("podinfo-primary").Spec.Replicas, 0); r < 6 {
		t.Fatalf("primary replicas %d", r)
	}
	if !strings.Contains(strings.Join(h.log, "\n"), "[PrimaryScaledUp]") {
		t.Fatalf("no scale-up event\n%s", strings.Join(h.log, "\n"))
	}
	t.Log("\n" + strings.Join(h.log, "\n"))
}
