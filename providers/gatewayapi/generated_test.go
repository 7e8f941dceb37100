package gatewayapi_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/providers"
	"sluice.dev/sluice/providers/gatewayapi"
)

func TestGeneratedMeshRoute(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	ns := env.Namespace(t)
	canary := newCanary(t, ns, func(s *sluicev1.CanaryService) {
		s.Timeout = "1.5s"
		s.Headers = &sluicev1.HeaderOperations{Request: &sluicev1.HeaderOperation{Set: map[string]string{"x-rollout": "sluice"}}}
		s.Match = []sluicev1.HTTPMatchRequest{{
			URI:     &sluicev1.StringMatch{Prefix: ptr.To("/api")},
			Headers: map[string]sluicev1.StringMatch{"x-user": {Exact: ptr.To("beta")}},
		}}
	})

	if _, err := h.GetRoutes(ctx, canary); !errors.Is(err, providers.ErrRouteNotFound) {
		t.Fatalf("GetRoutes before Reconcile: %v, want ErrRouteNotFound", err)
	}
	if err := h.SetRoutes(ctx, canary, providers.CanaryWeight(10)); !errors.Is(err, providers.ErrRouteNotFound) {
		t.Fatalf("SetRoutes before Reconcile: %v, want ErrRouteNotFound", err)
	}
	if err := h.Reconcile(ctx, canary); err != nil {
		t.Fatal(err)
	}
	route := getRoute(t, ns, "podinfo")
	if !metav1.IsControlledBy(route, canary) {
		t.Errorf("route owners = %+v, want controlled by the Canary", route.OwnerReferences)
	}
	wantParent := gwv1.ParentReference{Group: ptr.To(gwv1.Group("")), Kind: ptr.To(gwv1.Kind("Service")),
		Name: "podinfo", Port: ptr.To(gwv1.PortNumber(9898))}
	if !reflect.DeepEqual(route.Spec.ParentRefs, []gwv1.ParentReference{wantParent}) {
		t.Errorf("parentRefs = %+v, want the apex Service", route.Spec.ParentRefs)
	}
	if len(route.Spec.Rules) != 1 {
		t.Fatalf("rules = %+v, want one", route.Spec.Rules)
	}
	rule := route.Spec.Rules[0]
	if got := ptr.Deref(rule.Timeouts, gwv1.HTTPRouteTimeouts{}).Request; got == nil || *got != "1s500ms" {
		t.Errorf("timeouts = %+v, want request 1s500ms", rule.Timeouts)
	}
	if len(rule.Filters) != 1 || rule.Filters[0].RequestHeaderModifier == nil {
		t.Errorf("filters = %+v, want the request header modifier", rule.Filters)
	}
	if len(rule.Matches) != 1 || *rule.Matches[0].Path.Value != "/api" || rule.Matches[0].Headers[0].Value != "beta" {
		t.Errorf("matches = %+v", rule.Matches)
	}
	if got := pairOf(t, rule, 9898, nil); got != providers.CanaryWeight(0) {
		t.Fatalf("new route weights = %+v, want 100/0", got)
	}
	h.noWrites(t, "Reconcile of an unchanged route", func() error { return h.Reconcile(ctx, canary) })

	for _, c := range plan {
		want := providers.CanaryWeight(c)
		if err := h.SetRoutes(ctx, canary, want); err != nil {
			t.Fatalf("SetRoutes(%d): %v", c, err)
		}
		got, err := h.GetRoutes(ctx, canary)
		if err != nil || got != want {
			t.Fatalf("GetRoutes after SetRoutes(%d) = %+v, %v", c, got, err)
		}
		if w := pairOf(t, getRoute(t, ns, "podinfo").Spec.Rules[0], 9898, nil); w.Primary+w.Canary != providers.TotalWeight || w != want {
			t.Fatalf("route weights %+v, want %+v", w, want)
		}
		h.noWrites(t, "Reconcile after SetRoutes", func() error { return h.Reconcile(ctx, canary) })
		h.noWrites(t, "SetRoutes to the same weights", func() error { return h.SetRoutes(ctx, canary, want) })
		if got, err := h.GetRoutes(ctx, canary); err != nil || got != want {
			t.Fatalf("GetRoutes after Reconcile = %+v, %v; want %+v", got, err, want)
		}
	}

	// Someone edits the generated route: Reconcile converges the spec and keeps the weights.
	if err := h.SetRoutes(ctx, canary, providers.CanaryWeight(30)); err != nil {
		t.Fatal(err)
	}
	route = getRoute(t, ns, "podinfo")
	route.Spec.Hostnames = []gwv1.Hostname{"rogue.example.com"}
	route.Spec.Rules[0].Timeouts = nil
	if err := env.Client.Update(ctx, route); err != nil {
		t.Fatal(err)
	}
	if err := h.Reconcile(ctx, canary); err != nil {
		t.Fatal(err)
	}
	route = getRoute(t, ns, "podinfo")
	if route.Spec.Hostnames != nil || route.Spec.Rules[0].Timeouts == nil {
		t.Errorf("Reconcile did not converge the spec: hostnames %v, timeouts %+v", route.Spec.Hostnames, route.Spec.Rules[0].Timeouts)
	}
	if got, err := h.GetRoutes(ctx, canary); err != nil || got != providers.CanaryWeight(30) {
		t.Errorf("Reconcile changed the weights: %+v, %v", got, err)
	}

	if err := h.SetRoutes(ctx, canary, providers.Weights{Primary: 60, Canary: 60}); err == nil {
		t.Error("SetRoutes accepted weights summing to 120")
	}

	if err := h.Finalize(ctx, canary); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(route), &gwv1.HTTPRoute{}); !apierrors.IsNotFound(err) {
		t.Fatalf("route after Finalize: %v, want NotFound", err)
	}
	if err := h.Finalize(ctx, canary); err != nil {
		t.Fatalf("second Finalize: %v", err)
	}
}

func TestGeneratedGatewayRoute(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	ns := env.Namespace(t)
	canary := newCanary(t, ns, func(s *sluicev1.CanaryService) {
		s.Name = "web"
		s.GatewayRefs = []gwv1.ParentReference{{Name: "public", Namespace: ptr.To(gwv1.Namespace("infra")), SectionName: ptr.To(gwv1.SectionName("https"))}}
		s.Hosts = []string{"app.example.com", "www.example.com"}
	})
	if err := h.Reconcile(ctx, canary); err != nil {
		t.Fatal(err)
	}
	route := getRoute(t, ns, "web")
	want := []gwv1.ParentReference{{Group: ptr.To(gwv1.Group(gwv1.GroupName)), Kind: ptr.To(gwv1.Kind("Gateway")),
		Name: "public", Namespace: ptr.To(gwv1.Namespace("infra")), SectionName: ptr.To(gwv1.SectionName("https"))}}
	if !reflect.DeepEqual(route.Spec.ParentRefs, want) {
		t.Errorf("parentRefs = %+v, want %+v", route.Spec.ParentRefs, want)
	}
	if !reflect.DeepEqual(route.Spec.Hostnames, []gwv1.Hostname{"app.example.com", "www.example.com"}) {
		t.Errorf("hostnames = %v", route.Spec.Hostnames)
	}
	if names := []gwv1.ObjectName{route.Spec.Rules[0].BackendRefs[0].Name, route.Spec.Rules[0].BackendRefs[1].Name}; names[0] != "web-primary" || names[1] != "web-canary" {
		t.Errorf("backends = %v", names)
	}
	h.noWrites(t, "second Reconcile", func() error { return h.Reconcile(ctx, canary) })
}

func TestGeneratedRouteNotOurs(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	ns := env.Namespace(t)
	canary := newCanary(t, ns, nil)
	theirs := &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Name: "podinfo", Namespace: ns}, Spec: gwv1.HTTPRouteSpec{
		Rules: []gwv1.HTTPRouteRule{{BackendRefs: []gwv1.HTTPBackendRef{serviceRef("podinfo", 9898, nil)}}},
	}}
	if err := env.Client.Create(ctx, theirs); err != nil {
		t.Fatal(err)
	}
	if err := h.Reconcile(ctx, canary); !errors.Is(err, gatewayapi.ErrRouteConflict) {
		t.Fatalf("Reconcile over a user's route: %v, want ErrRouteConflict", err)
	}
	h.noWrites(t, "Finalize of a route that is not ours", func() error { return h.Finalize(ctx, canary) })
	getRoute(t, ns, "podinfo")
}
