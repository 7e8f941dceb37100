package canary

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// podinfoScaledObject is the team's KEDA ScaledObject of the target, with a Prometheus trigger
// named rps whose query selects the target's pods.
const podinfoScaledObject = `
apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata: {name: podinfo}
spec:
  scaleTargetRef: {name: podinfo}
  minReplicaCount: 2
  maxReplicaCount: 10
  triggers:
  - type: prometheus
    name: rps
    metadata:
      serverAddress: http://prometheus.monitoring:9090
      query: sum(rate(http_requests_total{app="podinfo"}[1m]))
      threshold: "100"
  - type: cpu
    metricType: Utilization
    metadata: {value: "80"}
`

// createScaledObject creates podinfoScaledObject under name against KEDA's CRD.
func (h *harness) createScaledObject(name string) {
	h.t.Helper()
	so := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(podinfoScaledObject), &so.Object); err != nil {
		h.t.Fatal(err)
	}
	so.SetNamespace(h.ns)
	so.SetName(name)
	if err := h.c.Create(h.ctx, so); err != nil {
		h.t.Fatalf("creating the ScaledObject %s against KEDA's CRD: %v", name, err)
	}
}

func (h *harness) scaledObject(name string) *unstructured.Unstructured {
	h.t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(scaledObjectGVK)
	if err := h.c.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: name}, u); err != nil {
		h.t.Fatalf("reading ScaledObject %s: %v", name, err)
	}
	return u
}

// TestKEDAScaledObjectOnRealCRD (issue 16): with KEDA's own ScaledObject CRD installed (vendored
// from the KEDA module, test/testenv/crds), the primary gets its own ScaledObject targeting
// podinfo-primary with primaryScalerReplicas and primaryScalerQueries applied (the rps trigger's
// query replaced, its other metadata and the cpu trigger kept); the canary's ScaledObject is
// paused at 0 replicas between runs, released during a run, and paused again after promotion.
func TestKEDAScaledObjectOnRealCRD(t *testing.T) {
	h := newHarnessFor(t, sluicev1.ProviderKubernetes)
	h.app(3, "6.7.0")
	h.createScaledObject("podinfo")
	primaryQuery := `sum(rate(http_requests_total{app="podinfo-primary"}[1m]))`
	c := h.blueGreenCanaryFor()
	c.Spec.AutoscalerRef = &sluicev1.AutoscalerReference{APIVersion: "keda.sh/v1alpha1", Kind: sluicev1.AutoscalerScaledObject, Name: "podinfo",
		PrimaryScalerReplicas: &sluicev1.ScalerReplicas{MinReplicas: ptr.To[int32](3), MaxReplicas: ptr.To[int32](8)},
		PrimaryScalerQueries:  map[string]string{"rps": primaryQuery}}
	h.create(c)
	h.runUntil(sluicev1.CanaryPhaseInitialized, 20)

	primary := h.scaledObject("podinfo-primary")
	if !ownedBy(primary, h.canary()) {
		t.Fatalf("primary ScaledObject not owned by the Canary: %v %v", primary.GetLabels(), primary.GetOwnerReferences())
	}
	str := func(u *unstructured.Unstructured, path ...string) string {
		v, _, _ := unstructured.NestedFieldNoCopy(u.Object, path...)
		s, _ := yaml.Marshal(v)
		return strings.TrimSpace(string(s))
	}
	for path, want := range map[string]string{
		"spec.scaleTargetRef.name": "podinfo-primary", "spec.scaleTargetRef.kind": "Deployment",
		"spec.minReplicaCount": "3", "spec.maxReplicaCount": "8",
	} {
		if got := str(primary, strings.Split(path, ".")...); got != want {
			t.Errorf("primary ScaledObject %s = %s, want %s", path, got, want)
		}
	}
	triggers, _, _ := unstructured.NestedSlice(primary.Object, "spec", "triggers")
	if len(triggers) != 2 {
		t.Fatalf("primary ScaledObject triggers %v", triggers)
	}
	rps, _ := triggers[0].(map[string]any)["metadata"].(map[string]any)
	if rps["query"] != primaryQuery || rps["serverAddress"] != "http://prometheus.monitoring:9090" || rps["threshold"] != "100" {
		t.Errorf("rps trigger of the primary: %v", rps)
	}
	cpu, _ := triggers[1].(map[string]any)["metadata"].(map[string]any)
	if cpu["value"] != "80" || cpu["query"] != nil {
		t.Errorf("cpu trigger of the primary: %v", cpu)
	}
	canaryTriggers, _, _ := unstructured.NestedSlice(h.scaledObject("podinfo").Object, "spec", "triggers")
	if m := canaryTriggers[0].(map[string]any)["metadata"].(map[string]any); m["query"] != `sum(rate(http_requests_total{app="podinfo"}[1m]))` {
		t.Errorf("the canary's own ScaledObject query changed: %v", m)
	}
	paused := func() string { return h.scaledObject("podinfo").GetAnnotations()[kedaPausedReplicas] }
	if p := paused(); p != "0" {
		t.Fatalf("the canary's ScaledObject between runs: %s=%q, want \"0\"", kedaPausedReplicas, p)
	}

	h.setImage("6.7.1")
	released := false
	for i := 0; i < 60 && h.last.Phase != sluicev1.CanaryPhaseSucceeded; i++ {
		h.tick()
		if h.last.Phase == sluicev1.CanaryPhaseProgressing {
			if _, has := h.scaledObject("podinfo").GetAnnotations()[kedaPausedReplicas]; !has {
				released = true
			}
		}
	}
	if h.last.Phase != sluicev1.CanaryPhaseSucceeded {
		t.Fatalf("phase %s\n%s", h.last.Phase, strings.Join(h.log, "\n"))
	}
	if !released {
		t.Fatalf("the canary's ScaledObject stayed paused during the run\n%s", strings.Join(h.log, "\n"))
	}
	if p := paused(); p != "0" {
		t.Fatalf("the canary's ScaledObject after promotion: %s=%q, want \"0\"", kedaPausedReplicas, p)
	}
	if r := ptr.Deref(h.deployment("podinfo").Spec.Replicas, -1); r != 0 {
		t.Fatalf("canary replicas after promotion: %d", r)
	}
}

// TestPrimaryScalerQueriesKeyNamingNoTriggerStalls (findings16b F2): primaryScalerQueries keyed by
// something that names no trigger of the ScaledObject (here the trigger's type, not its name)
// would leave the primary scaling on the canary's query; the Canary stalls naming the key and the
// triggers there are, and no primary ScaledObject is written.
func TestPrimaryScalerQueriesKeyNamingNoTriggerStalls(t *testing.T) {
	h := newHarnessFor(t, sluicev1.ProviderKubernetes)
	h.app(3, "6.7.0")
	h.createScaledObject("podinfo")
	c := h.blueGreenCanaryFor()
	c.Spec.AutoscalerRef = &sluicev1.AutoscalerReference{APIVersion: "keda.sh/v1alpha1", Kind: sluicev1.AutoscalerScaledObject, Name: "podinfo",
		PrimaryScalerQueries: map[string]string{"prometheus": `sum(rate(http_requests_total{app="podinfo-primary"}[1m]))`}}
	h.create(c)
	for i := 0; i < 4; i++ {
		h.tick()
	}
	cond := findCondition(h.canary(), sluicev1.ConditionStalled)
	if cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != sluicev1.ReasonInvalidSpec ||
		!strings.Contains(cond.Message, `primaryScalerQueries: "prometheus" names no trigger of ScaledObject podinfo (named triggers: ["rps"])`) {
		t.Fatalf("Stalled condition %+v, want InvalidSpec naming the key and the trigger names", cond)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(scaledObjectGVK)
	if err := h.c.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: "podinfo-primary"}, u); err == nil {
		t.Fatal("a primary ScaledObject was written with the canary's query")
	}
}
