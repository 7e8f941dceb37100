package istio

import (
	"fmt"
	"maps"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	istionetv1 "istio.io/client-go/pkg/apis/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/providers"
)

// seedVirtualService is the VirtualService of seed 003_8198722ba9ac091d.txt, with labels and
// annotations of its owner added to check they survive.
const seedVirtualService = `
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata:
  name: user-service
  labels: {app: user-service}
  annotations: {team: payments}
spec:
  hosts: [user-service]
  http:
    - match:
        - headers:
            x-canary: { exact: "true" }
      route:
        - destination: { host: user-service, subset: canary }
    - route:
        - destination: { host: user-service, subset: stable }
          weight: 90
        - destination: { host: user-service, subset: canary }
          weight: 10
      retries:
        attempts: 3
        perTryTimeout: 2s
        retryOn: 5xx,reset,connect-failure
      timeout: 10s
`

// seedDestinationRule is the circuit-breaking DestinationRule of the same seed.
const seedDestinationRule = `
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata:
  name: user-service
spec:
  host: user-service
  trafficPolicy:
    connectionPool:
      tcp: { maxConnections: 100, connectTimeout: 5s }
      http: { h2UpgradePolicy: DEFAULT, http1MaxPendingRequests: 100, http2MaxRequests: 1000 }
    outlierDetection:
      consecutive5xxErrors: 5
      interval: 10s
      baseEjectionTime: 30s
      maxEjectionPercent: 50
    loadBalancer:
      simple: LEAST_REQUEST
  subsets:
    - name: stable
      labels: { version: v1 }
    - name: canary
      labels: { version: v2 }
`

// createSeed creates the seed's VirtualService and DestinationRule in ns from their YAML, as
// kubectl would (unstructured, so the apiserver stores exactly what the manifest says), and
// returns them as read back.
func createSeed(t *testing.T, ns string) (*istionetv1.VirtualService, *istionetv1.DestinationRule) {
	t.Helper()
	for _, manifest := range []string{seedVirtualService, seedDestinationRule} {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(manifest), &u.Object); err != nil {
			t.Fatal(err)
		}
		u.SetNamespace(ns)
		if err := env.Client.Create(t.Context(), u, client.FieldOwner("kubectl")); err != nil {
			t.Fatalf("creating %s: %v", u.GetKind(), err)
		}
	}
	return getVS(t, ns, "user-service"), getDR(t, ns, "user-service")
}

// rawVirtualService reads the VirtualService as the apiserver serves it, without the metadata
// Kubernetes manages (resourceVersion, generation, managedFields, uid, creationTimestamp).
func rawVirtualService(t *testing.T, ns, name string) map[string]any {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("networking.istio.io/v1")
	u.SetKind("VirtualService")
	if err := env.Client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: name}, u); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"resourceVersion", "generation", "managedFields", "uid", "creationTimestamp"} {
		unstructured.RemoveNestedField(u.Object, "metadata", f)
	}
	return u.Object
}

// referenceVS makes a Canary reference the VirtualService name.
func referenceVS(name string) func(*sluicev1.Canary) {
	return func(c *sluicev1.Canary) {
		c.Spec.Service.RouteRef = &sluicev1.RouteReference{
			APIVersion: "networking.istio.io/v1", Kind: "VirtualService", Name: name,
		}
	}
}

// edit changes the VirtualService as `kubectl edit` would (an update by another field manager).
func edit(t *testing.T, ns, name string, change func(*istionetv1.VirtualService)) {
	t.Helper()
	vs := getVS(t, ns, name)
	change(vs)
	if err := env.Client.Update(t.Context(), vs, client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatalf("editing VirtualService: %v", err)
	}
}

// assertOnlyWeightsChanged checks that cur differs from the user's orig only in the managed
// destinations, which must be the primary/canary pair at w, and in Sluice's annotation.
func assertOnlyWeightsChanged(t *testing.T, orig, cur *istionetv1.VirtualService, w providers.Weights) {
	t.Helper()
	o, c := proto.CloneOf(&orig.Spec), proto.CloneOf(&cur.Spec)
	o.Http, c.Http = nil, nil
	protoDiff(t, "spec outside http", c, o)
	if len(cur.Spec.Http) != len(orig.Spec.Http) {
		t.Fatalf("%d HTTP routes, want %d", len(cur.Spec.Http), len(orig.Spec.Http))
	}
	for i := range orig.Spec.Http {
		or, cr := proto.CloneOf(orig.Spec.Http[i]), proto.CloneOf(cur.Spec.Http[i])
		or.Route, cr.Route = nil, nil
		protoDiff(t, fmt.Sprintf("http[%d] outside its destinations", i), cr, or)

		dests := cur.Spec.Http[i].Route
		if len(dests) != 2 {
			t.Fatalf("http[%d] has %d destinations, want primary and canary: %v", i, len(dests), dests)
		}
		p, k := dests[0], dests[1]
		if p.Destination.Host != "user-service-primary" || k.Destination.Host != "user-service-canary" ||
			p.Destination.Subset != "" || k.Destination.Subset != "" {
			t.Errorf("http[%d] destinations %v, want user-service-primary and user-service-canary without subset", i, dests)
		}
		if p.Weight != w.Primary || k.Weight != w.Canary || p.Weight+k.Weight != providers.TotalWeight {
			t.Errorf("http[%d] weights %d/%d, want %d/%d summing to 100", i, p.Weight, k.Weight, w.Primary, w.Canary)
		}
	}
	// The seed's retry, timeout and header match, spelled out.
	rule2 := cur.Spec.Http[1]
	if r := rule2.Retries; r.GetAttempts() != 3 || r.GetPerTryTimeout().AsDuration() != 2*time.Second ||
		r.GetRetryOn() != "5xx,reset,connect-failure" || rule2.GetTimeout().AsDuration() != 10*time.Second {
		t.Errorf("rule 2 retries %v timeout %v, want the seed's", r, rule2.GetTimeout())
	}
	if got := cur.Spec.Http[0].Match[0].Headers["x-canary"].GetExact(); got != "true" {
		t.Errorf("rule 1 header match x-canary = %q, want exact true", got)
	}
	if !maps.Equal(cur.Labels, orig.Labels) {
		t.Errorf("labels %v, want %v", cur.Labels, orig.Labels)
	}
	want := maps.Clone(orig.Annotations)
	want[AnnotationOriginalRoute] = cur.Annotations[AnnotationOriginalRoute]
	if !maps.Equal(cur.Annotations, want) || want[AnnotationOriginalRoute] == "" {
		t.Errorf("annotations %v, want the user's plus %s", cur.Annotations, AnnotationOriginalRoute)
	}
}
