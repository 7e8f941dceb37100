package canary

import (
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// TestPrimaryAutoscalerKeptWhileIdle (findings16b F11): under the manager, with the Canary idle
// (Initialized, no run, no timer), a deleted primary HPA is recreated and an edit of the team's
// HPA reaches the primary's copy within seconds; a deleted primary ScaledObject is recreated too.
func TestPrimaryAutoscalerKeptWhileIdle(t *testing.T) {
	h := newHarnessFor(t, sluicev1.ProviderKubernetes)
	h.app(3, "6.7.0")
	if err := h.c.Create(h.ctx, podinfoHPA(h.ns)); err != nil {
		t.Fatal(err)
	}
	h.createScaledObject("podinfo-keda")
	playDeploymentController(t, h.ns)
	startManager(t, h.ns, "", &scriptedAnalyzer{})
	c := h.blueGreenCanaryFor()
	c.Spec.Analysis.Interval = "1s"
	c.Spec.AutoscalerRef = &sluicev1.AutoscalerReference{APIVersion: "autoscaling/v2", Kind: sluicev1.AutoscalerHPA, Name: "podinfo"}
	h.create(c)
	waitFor(t, h.ns, "podinfo", 30*time.Second, "Initialized", func(c *sluicev1.Canary) bool {
		return c.Status.Phase == sluicev1.CanaryPhaseInitialized
	})
	primaryHPA := func() (*autoscalingv2.HorizontalPodAutoscaler, error) {
		hpa := &autoscalingv2.HorizontalPodAutoscaler{}
		return hpa, h.c.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: "podinfo-primary"}, hpa)
	}
	eventually := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if cond() {
				return
			}
		}
		t.Fatalf("idle Canary: %s not within 15 s", what)
	}
	hpa, err := primaryHPA()
	if err != nil {
		t.Fatal(err)
	}
	if err := h.c.Delete(h.ctx, hpa); err != nil {
		t.Fatal(err)
	}
	eventually("the deleted primary HPA recreated", func() bool {
		got, err := primaryHPA()
		return err == nil && got.UID != hpa.UID && got.Spec.ScaleTargetRef.Name == "podinfo-primary"
	})
	team := &autoscalingv2.HorizontalPodAutoscaler{}
	if err := h.c.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: "podinfo"}, team); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(team.DeepCopy())
	team.Spec.MinReplicas, team.Spec.MaxReplicas = ptr.To[int32](3), 7
	if err := h.c.Patch(h.ctx, team, patch); err != nil {
		t.Fatal(err)
	}
	eventually("the team's HPA edit (3–7) copied to the primary's", func() bool {
		got, err := primaryHPA()
		return err == nil && got.Spec.MaxReplicas == 7 && ptr.Deref(got.Spec.MinReplicas, 0) == 3
	})

	// The same Canary moved to the team's ScaledObject: the primary's copy comes back when deleted.
	latest := h.canary()
	latest.Spec.AutoscalerRef = &sluicev1.AutoscalerReference{APIVersion: "keda.sh/v1alpha1", Kind: sluicev1.AutoscalerScaledObject, Name: "podinfo-keda"}
	if err := h.c.Update(h.ctx, latest); err != nil {
		t.Fatal(err)
	}
	primarySO := func() (*unstructured.Unstructured, error) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(scaledObjectGVK)
		return u, h.c.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: "podinfo-keda-primary"}, u)
	}
	eventually("the primary ScaledObject created", func() bool { _, err := primarySO(); return err == nil })
	first, _ := primarySO()
	if err := h.c.Delete(h.ctx, first); err != nil {
		t.Fatal(err)
	}
	eventually("the deleted primary ScaledObject recreated", func() bool {
		got, err := primarySO()
		return err == nil && got.GetUID() != first.GetUID()
	})
}
