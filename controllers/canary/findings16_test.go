package canary

import (
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// TestAutoscalerOfAnotherWorkloadStalls (findings16 #5): an autoscalerRef naming an HPA, or a
// ScaledObject, that scales another Deployment (a copy-paste slip) stalls naming
// spec.autoscalerRef and both workloads, instead of autoscaling the primary with another app's
// bounds while the target's own autoscaler is ignored; no primary autoscaler is created.
func TestAutoscalerOfAnotherWorkloadStalls(t *testing.T) {
	for _, kind := range []string{sluicev1.AutoscalerHPA, sluicev1.AutoscalerScaledObject} {
		t.Run(kind, func(t *testing.T) {
			h := newHarnessFor(t, sluicev1.ProviderKubernetes)
			h.app(3, "6.7.0")
			ref := &sluicev1.AutoscalerReference{Kind: kind, Name: "other"}
			if kind == sluicev1.AutoscalerHPA {
				ref.APIVersion = "autoscaling/v2"
				hpa := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: h.ns},
					Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
						ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "other"},
						MinReplicas:    ptr.To[int32](2), MaxReplicas: 4}}
				if err := h.c.Create(h.ctx, hpa); err != nil {
					t.Fatal(err)
				}
			} else {
				ref.APIVersion = "keda.sh/v1alpha1"
				so := &unstructured.Unstructured{}
				// The team's ScaledObject of another Deployment: metadata.name and scaleTargetRef other.
				if err := yaml.Unmarshal([]byte(strings.ReplaceAll(podinfoScaledObject, "{name: podinfo}", "{name: other}")), &so.Object); err != nil {
					t.Fatal(err)
				}
				so.SetNamespace(h.ns)
				if err := h.c.Create(h.ctx, so); err != nil {
					t.Fatal(err)
				}
			}
			c := h.blueGreenCanaryFor()
			c.Spec.AutoscalerRef = ref
			h.create(c)
			for i := 0; i < 4; i++ {
				h.tick()
			}
			cond := findCondition(h.canary(), sluicev1.ConditionStalled)
			if cond == nil || cond.Status != metav1.ConditionTrue || !strings.Contains(cond.Message, "spec.autoscalerRef") ||
				!strings.Contains(cond.Message, "scales Deployment other, not the target Deployment podinfo") {
				t.Fatalf("Stalled condition %+v, want one naming spec.autoscalerRef and both Deployments", cond)
			}
			var primaryScaler client.Object = &autoscalingv2.HorizontalPodAutoscaler{}
			if kind == sluicev1.AutoscalerScaledObject {
				u := &unstructured.Unstructured{}
				u.SetGroupVersionKind(scaledObjectGVK)
				primaryScaler = u
			}
			if err := h.c.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: "other-primary"}, primaryScaler); err == nil {
				t.Fatal("a primary autoscaler was created from another workload's autoscaler")
			}
		})
	}
}

// TestKubernetesProviderInitializesWithoutRouteWarnings (findings16 #5, noise): under the manager
// (cached client), a provider kubernetes Canary initializes without a RouteNotFound warning about
// the Services Sluice itself just created.
func TestKubernetesProviderInitializesWithoutRouteWarnings(t *testing.T) {
	h := newHarnessFor(t, sluicev1.ProviderKubernetes)
	h.app(2, "1")
	playDeploymentController(t, h.ns)
	m := startManager(t, h.ns, "", &scriptedAnalyzer{})
	c := h.blueGreenCanaryFor()
	c.Spec.Analysis.Interval = "1s"
	h.create(c)
	waitFor(t, h.ns, "podinfo", 30*time.Second, "Initialized", func(c *sluicev1.Canary) bool {
		return c.Status.Phase == sluicev1.CanaryPhaseInitialized
	})
	time.Sleep(2 * time.Second)
	log := strings.Join(m.events.drain(), "\n")
	if strings.Contains(log, "["+sluicev1.ReasonRouteNotFound+"]") {
		t.Fatalf("RouteNotFound warning about Sluice's own Services:\n%s", log)
	}
	if !strings.Contains(log, "[Initialized]") {
		t.Fatalf("no Initialized event recorded (the event log reads nothing?):\n%s", log)
	}
}
