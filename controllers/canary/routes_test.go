package canary

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	networkingv1 "istio.io/api/networking/v1"
	istionetv1 "istio.io/client-go/pkg/apis/networking/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// applyYAML creates every document in the harness's namespace, as kubectl would.
func (h *harness) applyYAML(docs string) {
	h.t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader([]byte(docs)), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return
			}
			h.t.Fatal(err)
		}
		u.SetNamespace(h.ns)
		if err := h.c.Create(h.ctx, u); err != nil {
			h.t.Fatalf("creating %s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
}

// rawSpec returns the spec of an object as the apiserver serves it, as JSON.
func (h *harness) rawSpec(gvk schema.GroupVersionKind, name string) string {
	h.t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	if err := h.c.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: name}, u); err != nil {
		h.t.Fatal(err)
	}
	b, err := json.Marshal(u.Object["spec"])
	if err != nil {
		h.t.Fatal(err)
	}
	return string(b)
}

// deleteAndFinalize deletes the Canary and reconciles until it is gone.
func (h *harness) deleteAndFinalize() {
	h.t.Helper()
	if err := h.c.Delete(h.ctx, h.canary()); err != nil {
		h.t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		if _, err := h.r.Reconcile(h.ctx, ctrl.Request{NamespacedName: client.ObjectKey{Namespace: h.ns, Name: h.name}}); err != nil {
			h.t.Fatalf("reconcile during deletion: %v", err)
		}
		markDeploymentsRolledOut(h.t, h.c, h.ns)
		err := h.c.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: h.name}, &sluicev1.Canary{})
		if apierrors.IsNotFound(err) {
			return
		}
		h.clock.Step(PollIntervalForTests)
	}
	h.t.Fatalf("canary still present after deletion: %+v", h.canary().Status)
}

// PollIntervalForTests is how far the fake clock moves between deletion ticks.
const PollIntervalForTests = 2e9

// assertTargetServes checks the revertOnDeletion outcome: the target runs with wantReplicas,
// the apex Service selects it, and the primary objects are gone.
func (h *harness) assertTargetServes(wantReplicas int32) {
	h.t.Helper()
	if got := *h.deployment("podinfo").Spec.Replicas; got != wantReplicas {
		h.t.Fatalf("target replicas %d after revert, want %d", got, wantReplicas)
	}
	apex := &corev1.Service{}
	if err := h.c.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: "podinfo"}, apex); err != nil {
		h.t.Fatalf("apex service gone after revert: %v", err)
	}
	if apex.Spec.Selector["app"] != "podinfo" {
		h.t.Fatalf("apex service selects %v, want the target's pods", apex.Spec.Selector)
	}
	for _, name := range []string{"podinfo-primary"} {
		err := h.c.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: name}, h.deploymentObj())
		if !apierrors.IsNotFound(err) {
			h.t.Fatalf("%s still exists after revert: %v", name, err)
		}
	}
}

func (h *harness) deploymentObj() client.Object {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment"}}
}

const seedVirtualService = `
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata:
  name: podinfo
  labels: {team: payments}
spec:
  hosts: [podinfo]
  http:
    - match:
        - headers:
            x-canary: { exact: "true" }
      route:
        - destination: { host: podinfo, subset: canary }
    - route:
        - destination: { host: podinfo, subset: stable }
          weight: 90
        - destination: { host: podinfo, subset: canary }
          weight: 10
      retries:
        attempts: 3
        perTryTimeout: 2s
        retryOn: 5xx,reset,connect-failure
      timeout: 10s
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata:
  name: podinfo
spec:
  host: podinfo
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

// TestIstioSeedRolloutKeepsUserRouting runs a whole rollout through the Istio provider on the
// seed's VirtualService and DestinationRule: at every tick the weights sum to 100 and every
// non-weight field is unchanged; deleting the Canary restores the VirtualService byte for byte.
func TestIstioSeedRolloutKeepsUserRouting(t *testing.T) {
	h := newHarnessFor(t, sluicev1.ProviderIstio)
	h.app(2, "1")
	h.applyYAML(seedVirtualService)
	vsGVK := istionetv1.SchemeGroupVersion.WithKind("VirtualService")
	originalVS := h.rawSpec(vsGVK, "podinfo")
	original := &istionetv1.VirtualService{}
	if err := h.c.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: "podinfo"}, original); err != nil {
		t.Fatal(err)
	}
	dr := &istionetv1.DestinationRule{}
	if err := h.c.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: "podinfo"}, dr); err != nil {
		t.Fatal(err)
	}
	c := h.canaryFor()
	c.Spec.RevertOnDeletion = true
	c.Spec.Service.RouteRef = &sluicev1.RouteReference{APIVersion: "networking.istio.io/v1", Kind: "VirtualService", Name: "podinfo"}
	h.create(c)

	check := func() {
		vs := &istionetv1.VirtualService{}
		if err := h.c.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: "podinfo"}, vs); err != nil {
			t.Fatal(err)
		}
		if len(vs.Spec.Http) != len(original.Spec.Http) {
			t.Fatalf("%d http routes, want %d", len(vs.Spec.Http), len(original.Spec.Http))
		}
		for i, route := range vs.Spec.Http {
			var sum int32
			for _, d := range route.Route {
				if d.Destination.Host != "podinfo-primary" && d.Destination.Host != "podinfo-canary" && len(route.Route) > 1 {
					t.Fatalf("route %d sends to %s", i, d.Destination.Host)
				}
				sum += d.Weight
			}
			if len(route.Route) > 1 && sum != 100 {
				t.Fatalf("route %d weights sum to %d", i, sum)
			}
			got, want := proto.Clone(route).(*networkingv1.HTTPRoute), proto.Clone(original.Spec.Http[i]).(*networkingv1.HTTPRoute)
			got.Route, want.Route = nil, nil
			if !proto.Equal(got, want) {
				t.Fatalf("route %d changed beyond its destinations:\n got %v\nwant %v", i, got, want)
			}
		}
		if !proto.Equal(&vs.Spec, &original.Spec) && !reflect.DeepEqual(vs.Spec.Hosts, original.Spec.Hosts) {
			t.Fatal("hosts changed")
		}
		now := &istionetv1.DestinationRule{}
		if err := h.c.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: "podinfo"}, now); err != nil {
			t.Fatal(err)
		}
		if now.ResourceVersion != dr.ResourceVersion {
			t.Fatal("the user's DestinationRule was written")
		}
	}
	h.runUntil(sluicev1.CanaryPhaseInitialized, 10)
	h.setImage("2")
	for i := 0; i < 40 && h.last.Phase != sluicev1.CanaryPhaseSucceeded; i++ {
		h.tick()
		check()
	}
	if h.last.Phase != sluicev1.CanaryPhaseSucceeded {
		t.Fatalf("not promoted:\n%s", strings.Join(h.log, "\n"))
	}
	h.deleteAndFinalize()
	if got := h.rawSpec(vsGVK, "podinfo"); got != originalVS {
		t.Fatalf("VirtualService not restored byte for byte:\n got %s\nwant %s", got, originalVS)
	}
	vs := &istionetv1.VirtualService{}
	if err := h.c.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: "podinfo"}, vs); err != nil {
		t.Fatal(err)
	}
	if vs.Labels["team"] != "payments" || len(vs.Annotations) != 0 {
		t.Fatalf("metadata not restored: labels %v annotations %v", vs.Labels, vs.Annotations)
	}
	h.assertTargetServes(2)
}

const threeRuleRoute = `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: podinfo
spec:
  parentRefs:
  - {group: "", kind: Service, name: podinfo, port: 9898}
  rules:
  - matches:
    - path: {type: PathPrefix, value: /api}
    filters:
    - type: URLRewrite
      urlRewrite:
        path: {type: ReplacePrefixMatch, replacePrefixMatch: /}
    timeouts: {request: 5s}
    backendRefs:
    - {name: podinfo, port: 9898}
  - matches:
    - path: {type: PathPrefix, value: /static}
    backendRefs:
    - {name: static-files, port: 8080}
  - matches:
    - headers:
      - {name: x-beta, value: "yes"}
    backendRefs:
    - {name: podinfo, port: 9898}
`

// TestReferenceHTTPRouteThreeRules runs a rollout on a user's three-rule HTTPRoute: rule B stays
// byte-identical, A and C keep matches, filters and timeouts with weight on them; deleting the
// Canary with revertOnDeletion restores the route and leaves the target serving.
func TestReferenceHTTPRouteThreeRules(t *testing.T) {
	h := newHarness(t)
	h.app(3, "1")
	h.applyYAML(threeRuleRoute)
	routeGVK := gwv1.SchemeGroupVersion.WithKind("HTTPRoute")
	originalSpec := h.rawSpec(routeGVK, "podinfo")
	original := &gwv1.HTTPRoute{}
	if err := h.c.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: "podinfo"}, original); err != nil {
		t.Fatal(err)
	}
	c := h.canaryFor()
	c.Spec.RevertOnDeletion = true
	c.Spec.Service.RouteRef = &sluicev1.RouteReference{APIVersion: "gateway.networking.k8s.io/v1", Kind: "HTTPRoute", Name: "podinfo"}
	h.create(c)
	check := func() {
		r := &gwv1.HTTPRoute{}
		if err := h.c.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: "podinfo"}, r); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(r.Spec.Rules[1], original.Spec.Rules[1]) {
			t.Fatalf("rule B changed: %+v", r.Spec.Rules[1])
		}
		for _, i := range []int{0, 2} {
			got, want := r.Spec.Rules[i], original.Spec.Rules[i]
			if !reflect.DeepEqual(got.Matches, want.Matches) || !reflect.DeepEqual(got.Filters, want.Filters) ||
				!reflect.DeepEqual(got.Timeouts, want.Timeouts) {
				t.Fatalf("rule %d lost its matches, filters or timeouts", i)
			}
			var sum int32
			for _, b := range got.BackendRefs {
				if b.Weight != nil {
					sum += *b.Weight
				} else {
					sum++
				}
			}
			if sum <= 0 || (len(got.BackendRefs) == 2 && sum != 100) {
				t.Fatalf("rule %d weights sum to %d", i, sum)
			}
		}
	}
	h.runUntil(sluicev1.CanaryPhaseInitialized, 10)
	check()
	h.setImage("2")
	for i := 0; i < 40 && h.last.Phase != sluicev1.CanaryPhaseSucceeded; i++ {
		h.tick()
		check()
	}
	if h.last.Phase != sluicev1.CanaryPhaseSucceeded {
		t.Fatalf("not promoted:\n%s", strings.Join(h.log, "\n"))
	}
	h.deleteAndFinalize()
	if got := h.rawSpec(routeGVK, "podinfo"); got != originalSpec {
		t.Fatalf("HTTPRoute not restored:\n got %s\nwant %s", got, originalSpec)
	}
	h.assertTargetServes(3)
}

// TestDeleteWithoutRevertKeepsServing deletes a Canary without revertOnDeletion: the objects that
// carry the traffic (primary Deployment, Services, config copies) lose the Canary's owner reference,
// so garbage collection leaves them serving, and the route still sends everything to the primary.
func TestDeleteWithoutRevertKeepsServing(t *testing.T) {
	h := newHarness(t)
	h.app(2, "1")
	h.applyYAML(threeRuleRoute)
	c := h.canaryFor()
	c.Spec.Service.RouteRef = &sluicev1.RouteReference{APIVersion: "gateway.networking.k8s.io/v1", Kind: "HTTPRoute", Name: "podinfo"}
	h.create(c)
	h.runUntil(sluicev1.CanaryPhaseInitialized, 10)
	uid := h.canary().UID
	h.deleteAndFinalize()
	owned := func(o client.Object) bool {
		for _, ref := range o.GetOwnerReferences() {
			if ref.UID == uid {
				return true
			}
		}
		return false
	}
	checks := []struct {
		obj  client.Object
		name string
	}{
		{&appsv1.Deployment{}, "podinfo-primary"}, {&corev1.Service{}, "podinfo"}, {&corev1.Service{}, "podinfo-primary"},
		{&corev1.Service{}, "podinfo-canary"}, {&corev1.ConfigMap{}, "podinfo-config-primary"},
	}
	for _, c := range checks {
		if err := h.c.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: c.name}, c.obj); err != nil {
			t.Fatalf("%s gone after deletion: %v", c.name, err)
		}
		if owned(c.obj) {
			t.Fatalf("%s still owned by the deleted Canary: garbage collection would remove it", c.name)
		}
	}
	if w, err := h.r.Routers[sluicev1.ProviderGatewayAPI].GetRoutes(h.ctx, c); err != nil || w.Primary != 100 {
		t.Fatalf("route after deletion: %+v, %v; want all traffic on the primary", w, err)
	}
}
