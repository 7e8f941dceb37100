package gatewayapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/providers"
	"sluice.dev/sluice/providers/gatewayapi"
	"sluice.dev/sluice/test/providertest"
)

// Rules of the three-rule route.
const ruleA, ruleB, ruleC = 0, 1, 2

// backendFilter is a backend-level filter on rule C's apex backendRef, kept on both halves.
var backendFilter = []gwv1.HTTPRouteFilter{{
	Type:                  gwv1.HTTPRouteFilterRequestHeaderModifier,
	RequestHeaderModifier: &gwv1.HTTPHeaderFilter{Set: []gwv1.HTTPHeader{{Name: "x-via", Value: "header-rule"}}},
}}

// newThreeRuleRoute creates the user's HTTPRoute "shop" of the canary engine issue: A (/api, URL
// rewrite, 5 s timeout) and C (header match, backend filter) route to the apex Service podinfo,
// B (/static) to another Service. It returns the route as stored (with server defaults).
func newThreeRuleRoute(t *testing.T, ns string) *gwv1.HTTPRoute {
	t.Helper()
	apexC := serviceRef("podinfo", 9898, ptr.To(int32(1)))
	apexC.Filters = backendFilter
	route := &gwv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: ns, Labels: map[string]string{"team": "shop"}},
		Spec: gwv1.HTTPRouteSpec{
			CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "public"}}},
			Hostnames:       []gwv1.Hostname{"shop.example.com"},
			Rules: []gwv1.HTTPRouteRule{
				{
					Matches: []gwv1.HTTPRouteMatch{{Path: &gwv1.HTTPPathMatch{Type: ptr.To(gwv1.PathMatchPathPrefix), Value: ptr.To("/api")}}},
					Filters: []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterURLRewrite, URLRewrite: &gwv1.HTTPURLRewriteFilter{
						Path: &gwv1.HTTPPathModifier{Type: gwv1.PrefixMatchHTTPPathModifier, ReplacePrefixMatch: ptr.To("/")},
					}}},
					Timeouts:    &gwv1.HTTPRouteTimeouts{Request: ptr.To(gwv1.Duration("5s"))},
					BackendRefs: []gwv1.HTTPBackendRef{serviceRef("podinfo", 9898, nil)},
				},
				{
					Name:        ptr.To(gwv1.SectionName("static")),
					Matches:     []gwv1.HTTPRouteMatch{{Path: &gwv1.HTTPPathMatch{Type: ptr.To(gwv1.PathMatchPathPrefix), Value: ptr.To("/static")}}},
					BackendRefs: []gwv1.HTTPBackendRef{serviceRef("static-files", 80, nil)},
				},
				{
					Matches:     []gwv1.HTTPRouteMatch{{Headers: []gwv1.HTTPHeaderMatch{{Name: "x-canary", Value: "always"}}}},
					BackendRefs: []gwv1.HTTPBackendRef{apexC},
				},
			},
		},
	}
	if err := env.Client.Create(context.Background(), route); err != nil {
		t.Fatalf("creating HTTPRoute: %v", err)
	}
	return route
}

func referenceCanary(t *testing.T, ns, route string) *sluicev1.Canary {
	t.Helper()
	return newCanary(t, ns, func(s *sluicev1.CanaryService) {
		s.RouteRef = &sluicev1.RouteReference{APIVersion: "gateway.networking.k8s.io/v1", Kind: "HTTPRoute", Name: route}
	})
}

// checkThreeRules checks the route after a step at want: B byte-identical, A and C with their
// matches, filters and timeouts and a primary/canary pair at want, everything else untouched.
func checkThreeRules(t *testing.T, orig, route *gwv1.HTTPRoute, want providers.Weights) {
	t.Helper()
	if !reflect.DeepEqual(route.Spec.ParentRefs, orig.Spec.ParentRefs) || !reflect.DeepEqual(route.Spec.Hostnames, orig.Spec.Hostnames) ||
		!reflect.DeepEqual(route.Labels, orig.Labels) {
		t.Fatalf("route metadata, parentRefs or hostnames changed")
	}
	if len(route.Spec.Rules) != 3 {
		t.Fatalf("route has %d rules, want 3", len(route.Spec.Rules))
	}
	if !reflect.DeepEqual(route.Spec.Rules[ruleB], orig.Spec.Rules[ruleB]) {
		t.Fatalf("rule B changed:\n got %+v\nwant %+v", route.Spec.Rules[ruleB], orig.Spec.Rules[ruleB])
	}
	for _, i := range []int{ruleA, ruleC} {
		got, was := route.Spec.Rules[i], orig.Spec.Rules[i]
		if !reflect.DeepEqual(got.Matches, was.Matches) || !reflect.DeepEqual(got.Filters, was.Filters) ||
			!reflect.DeepEqual(got.Timeouts, was.Timeouts) || !reflect.DeepEqual(got.Name, was.Name) {
			t.Fatalf("rule %d lost a match, filter or timeout:\n got %+v\nwant %+v", i, got, was)
		}
		w := pairOf(t, got, 9898, was.BackendRefs[0].Filters)
		if w != want || w.Primary+w.Canary != providers.TotalWeight {
			t.Fatalf("rule %d weights %+v, want %+v summing to %d", i, w, want, providers.TotalWeight)
		}
	}
}

func TestReferenceThreeRules(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	ns := env.Namespace(t)
	orig := newThreeRuleRoute(t, ns)
	canary := referenceCanary(t, ns, "shop")

	// Reconcile only checks the route; the first SetRoutes (100/0, as the engine initializes) splits it.
	h.noWrites(t, "Reconcile", func() error { return h.Reconcile(ctx, canary) })
	if route := getRoute(t, ns, "shop"); !reflect.DeepEqual(route.Spec.Rules, orig.Spec.Rules) {
		t.Fatal("Reconcile changed the rules")
	}
	if got, err := h.GetRoutes(ctx, canary); err != nil || got != providers.CanaryWeight(0) {
		t.Fatalf("GetRoutes of the route as written = %+v, %v; want 100/0", got, err)
	}
	if err := h.SetRoutes(ctx, canary, providers.CanaryWeight(0)); err != nil {
		t.Fatal(err)
	}
	route := getRoute(t, ns, "shop")
	checkThreeRules(t, orig, route, providers.CanaryWeight(0))
	var recorded []gwv1.HTTPRouteRule
	if err := json.Unmarshal([]byte(route.Annotations[gatewayapi.AnnotationOriginalRules]), &recorded); err != nil ||
		!reflect.DeepEqual(recorded, orig.Spec.Rules) {
		t.Fatalf("annotation %s does not hold the original rules: %v", gatewayapi.AnnotationOriginalRules, err)
	}
	h.noWrites(t, "Reconcile of a route already split", func() error { return h.Reconcile(ctx, canary) })

	for _, c := range plan {
		want := providers.CanaryWeight(c)
		if err := h.SetRoutes(ctx, canary, want); err != nil {
			t.Fatalf("SetRoutes(%d): %v", c, err)
		}
		checkThreeRules(t, orig, getRoute(t, ns, "shop"), want)
		if got, err := h.GetRoutes(ctx, canary); err != nil || got != want {
			t.Fatalf("GetRoutes after SetRoutes(%d) = %+v, %v", c, got, err)
		}
		h.noWrites(t, "Reconcile after SetRoutes", func() error { return h.Reconcile(ctx, canary) })
		h.noWrites(t, "SetRoutes to the same weights", func() error { return h.SetRoutes(ctx, canary, want) })
	}

	if err := h.Finalize(ctx, canary); err != nil {
		t.Fatal(err)
	}
	route = getRoute(t, ns, "shop")
	if !reflect.DeepEqual(route.Spec.Rules, orig.Spec.Rules) {
		t.Fatalf("Finalize did not restore the rules:\n got %+v\nwant %+v", route.Spec.Rules, orig.Spec.Rules)
	}
	if _, ok := route.Annotations[gatewayapi.AnnotationOriginalRules]; ok {
		t.Fatalf("Finalize left annotation %s", gatewayapi.AnnotationOriginalRules)
	}
	h.noWrites(t, "second Finalize", func() error { return h.Finalize(ctx, canary) })
}

func TestReferenceOutsideEdits(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	ns := env.Namespace(t)
	orig := newThreeRuleRoute(t, ns)
	canary := referenceCanary(t, ns, "shop")
	if err := h.Reconcile(ctx, canary); err != nil {
		t.Fatal(err)
	}
	if err := h.SetRoutes(ctx, canary, providers.CanaryWeight(30)); err != nil {
		t.Fatal(err)
	}

	// Someone moves weight in every managed rule: GetRoutes shows it, VerifyWeight calls it drift.
	setPair := func(route *gwv1.HTTPRoute, rule int, primary, canary int32) {
		route.Spec.Rules[rule].BackendRefs[0].Weight = ptr.To(primary)
		route.Spec.Rules[rule].BackendRefs[1].Weight = ptr.To(canary)
	}
	route := getRoute(t, ns, "shop")
	setPair(route, ruleA, 40, 60)
	setPair(route, ruleC, 40, 60)
	if err := env.Client.Update(ctx, route); err != nil {
		t.Fatal(err)
	}
	if got, err := h.GetRoutes(ctx, canary); err != nil || got != providers.CanaryWeight(60) {
		t.Fatalf("GetRoutes after an outside edit = %+v, %v; want 40/60", got, err)
	}
	if err := providertest.VerifyWeight(ctx, h, canary, providers.CanaryWeight(30)); !errors.Is(err, providers.ErrWeightDrift) {
		t.Fatalf("VerifyWeight = %v, want ErrWeightDrift", err)
	}
	if err := h.SetRoutes(ctx, canary, providers.CanaryWeight(30)); err != nil {
		t.Fatal(err)
	}
	checkThreeRules(t, orig, getRoute(t, ns, "shop"), providers.CanaryWeight(30))

	// An edit of one rule only, off the grid: GetRoutes refuses to guess, SetRoutes repairs it.
	route = getRoute(t, ns, "shop")
	setPair(route, ruleC, 80, 10)
	if err := env.Client.Update(ctx, route); err != nil {
		t.Fatal(err)
	}
	if _, err := h.GetRoutes(ctx, canary); err == nil {
		t.Fatal("GetRoutes accepted weights 80/10")
	}
	if err := h.SetRoutes(ctx, canary, providers.CanaryWeight(30)); err != nil {
		t.Fatal(err)
	}
	checkThreeRules(t, orig, getRoute(t, ns, "shop"), providers.CanaryWeight(30))

	// Non-weight edits to rule B and to managed rule A survive the next SetRoutes.
	route = getRoute(t, ns, "shop")
	extra := gwv1.HTTPRouteFilter{Type: gwv1.HTTPRouteFilterResponseHeaderModifier,
		ResponseHeaderModifier: &gwv1.HTTPHeaderFilter{Add: []gwv1.HTTPHeader{{Name: "x-cache", Value: "hit"}}}}
	route.Spec.Rules[ruleB].Filters = append(route.Spec.Rules[ruleB].Filters, extra)
	route.Spec.Rules[ruleA].Timeouts.Request = ptr.To(gwv1.Duration("7s"))
	if err := env.Client.Update(ctx, route); err != nil {
		t.Fatal(err)
	}
	edited := getRoute(t, ns, "shop")
	if err := h.SetRoutes(ctx, canary, providers.CanaryWeight(40)); err != nil {
		t.Fatal(err)
	}
	route = getRoute(t, ns, "shop")
	if !reflect.DeepEqual(route.Spec.Rules[ruleB], edited.Spec.Rules[ruleB]) || *route.Spec.Rules[ruleA].Timeouts.Request != "7s" {
		t.Fatalf("SetRoutes lost an outside edit: rule B %+v, rule A timeouts %+v", route.Spec.Rules[ruleB], route.Spec.Rules[ruleA].Timeouts)
	}
	checkThreeRules(t, edited, route, providers.CanaryWeight(40))
}

func TestReferenceConcurrentEdit(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	ns := env.Namespace(t)
	newThreeRuleRoute(t, ns)
	canary := referenceCanary(t, ns, "shop")
	if err := h.Reconcile(ctx, canary); err != nil {
		t.Fatal(err)
	}

	// Between the Router's read and its write, someone adds a filter to rule B.
	edited := false
	racy := gatewayapi.New(interceptor.NewClient(h.c, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if err := c.Get(ctx, key, obj, opts...); err != nil || edited {
				return err
			}
			edited = true
			route := obj.(*gwv1.HTTPRoute).DeepCopy()
			route.Spec.Rules[ruleB].Filters = backendFilter
			return env.Client.Update(ctx, route)
		},
	}))
	if err := racy.SetRoutes(ctx, canary, providers.CanaryWeight(20)); !apierrors.IsConflict(err) {
		t.Fatalf("SetRoutes over a concurrent edit: %v, want a Conflict", err)
	}
	route := getRoute(t, ns, "shop")
	if !reflect.DeepEqual(route.Spec.Rules[ruleB].Filters, backendFilter) {
		t.Fatal("the concurrent edit was lost")
	}
	if err := racy.SetRoutes(ctx, canary, providers.CanaryWeight(20)); err != nil {
		t.Fatalf("retried SetRoutes: %v", err)
	}
	if got, err := racy.GetRoutes(ctx, canary); err != nil || got != providers.CanaryWeight(20) {
		t.Fatalf("GetRoutes = %+v, %v", got, err)
	}
}

func TestReferenceSharedRule(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	ns := env.Namespace(t)
	orig := &gwv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Name: "mixed", Namespace: ns},
		Spec: gwv1.HTTPRouteSpec{Rules: []gwv1.HTTPRouteRule{{BackendRefs: []gwv1.HTTPBackendRef{
			serviceRef("legacy", 8080, ptr.To(int32(1))), serviceRef("podinfo", 9898, ptr.To(int32(3))),
		}}}},
	}
	if err := env.Client.Create(ctx, orig); err != nil {
		t.Fatal(err)
	}
	canary := referenceCanary(t, ns, "mixed")
	if err := h.Reconcile(ctx, canary); err != nil {
		t.Fatal(err)
	}
	for _, c := range plan {
		if err := h.SetRoutes(ctx, canary, providers.CanaryWeight(c)); err != nil {
			t.Fatal(err)
		}
		refs := getRoute(t, ns, "mixed").Spec.Rules[0].BackendRefs
		if len(refs) != 3 || refs[0].Name != "legacy" || refs[1].Name != "podinfo-primary" || refs[2].Name != "podinfo-canary" {
			t.Fatalf("backendRefs = %+v", refs)
		}
		// legacy keeps its quarter of the traffic; the apex's three quarters are split.
		if l, p, k := *refs[0].Weight, *refs[1].Weight, *refs[2].Weight; l != 100 || p != 3*(100-c) || k != 3*c {
			t.Fatalf("canary %d: weights legacy=%d primary=%d canary=%d", c, l, p, k)
		}
		if got, err := h.GetRoutes(ctx, canary); err != nil || got != providers.CanaryWeight(c) {
			t.Fatalf("GetRoutes = %+v, %v", got, err)
		}
	}
	if err := h.Finalize(ctx, canary); err != nil {
		t.Fatal(err)
	}
	if route := getRoute(t, ns, "mixed"); !reflect.DeepEqual(route.Spec.Rules, orig.Spec.Rules) {
		t.Fatalf("Finalize restored %+v, want %+v", route.Spec.Rules, orig.Spec.Rules)
	}
}

func TestReferenceUserReapplies(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	ns := env.Namespace(t)
	orig := newThreeRuleRoute(t, ns)
	canary := referenceCanary(t, ns, "shop")
	if err := h.Reconcile(ctx, canary); err != nil {
		t.Fatal(err)
	}
	if err := h.SetRoutes(ctx, canary, providers.CanaryWeight(30)); err != nil {
		t.Fatal(err)
	}
	// The user puts their own rules back, with a new timeout on rule A.
	route := getRoute(t, ns, "shop")
	route.Spec.Rules = orig.DeepCopy().Spec.Rules
	route.Spec.Rules[ruleA].Timeouts.Request = ptr.To(gwv1.Duration("9s"))
	if err := env.Client.Update(ctx, route); err != nil {
		t.Fatal(err)
	}
	reapplied := getRoute(t, ns, "shop")
	if got, err := h.GetRoutes(ctx, canary); err != nil || got != providers.CanaryWeight(0) {
		t.Fatalf("GetRoutes of the unsplit route = %+v, %v; want 100/0 (all traffic on the apex)", got, err)
	}
	if err := h.SetRoutes(ctx, canary, providers.CanaryWeight(30)); err != nil {
		t.Fatal(err)
	}
	checkThreeRules(t, reapplied, getRoute(t, ns, "shop"), providers.CanaryWeight(30))
	if err := h.Finalize(ctx, canary); err != nil {
		t.Fatal(err)
	}
	if route := getRoute(t, ns, "shop"); !reflect.DeepEqual(route.Spec.Rules, reapplied.Spec.Rules) {
		t.Fatal("Finalize did not restore the rules the user re-applied")
	}

	// Re-applied again just before the Canary goes: Finalize leaves the rules, drops the annotation.
	if err := h.SetRoutes(ctx, canary, providers.CanaryWeight(10)); err != nil {
		t.Fatal(err)
	}
	route = getRoute(t, ns, "shop")
	route.Spec.Rules = reapplied.DeepCopy().Spec.Rules
	if err := env.Client.Update(ctx, route); err != nil {
		t.Fatal(err)
	}
	if err := h.Finalize(ctx, canary); err != nil {
		t.Fatal(err)
	}
	route = getRoute(t, ns, "shop")
	if _, ok := route.Annotations[gatewayapi.AnnotationOriginalRules]; ok || !reflect.DeepEqual(route.Spec.Rules, reapplied.Spec.Rules) {
		t.Fatalf("Finalize after a re-apply: annotation kept %v, rules %+v", ok, route.Spec.Rules)
	}
}

func TestReferenceAnnotationRemoved(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	ns := env.Namespace(t)
	orig := newThreeRuleRoute(t, ns)
	canary := referenceCanary(t, ns, "shop")
	if err := h.SetRoutes(ctx, canary, providers.CanaryWeight(20)); err != nil {
		t.Fatal(err)
	}
	route := getRoute(t, ns, "shop")
	delete(route.Annotations, gatewayapi.AnnotationOriginalRules)
	if err := env.Client.Update(ctx, route); err != nil {
		t.Fatal(err)
	}
	if err := h.SetRoutes(ctx, canary, providers.CanaryWeight(20)); err != nil {
		t.Fatal(err)
	}
	if _, ok := getRoute(t, ns, "shop").Annotations[gatewayapi.AnnotationOriginalRules]; !ok {
		t.Fatal("SetRoutes did not record the rules again")
	}
	if got, err := h.GetRoutes(ctx, canary); err != nil || got != providers.CanaryWeight(20) {
		t.Fatalf("GetRoutes = %+v, %v", got, err)
	}
	if err := h.Finalize(ctx, canary); err != nil {
		t.Fatal(err)
	}
	// The reconstruction routes every rule as the user did; apex weights read 100 instead of 1.
	route = getRoute(t, ns, "shop")
	want := orig.DeepCopy().Spec.Rules
	want[ruleA].BackendRefs[0].Weight = ptr.To(int32(100))
	want[ruleC].BackendRefs[0].Weight = ptr.To(int32(100))
	if !reflect.DeepEqual(route.Spec.Rules, want) {
		t.Fatalf("Finalize restored %+v, want %+v", route.Spec.Rules, want)
	}
}

func TestReferenceErrors(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	ns := env.Namespace(t)

	missing := referenceCanary(t, ns, "nowhere")
	if err := h.Reconcile(ctx, missing); !errors.Is(err, providers.ErrRouteNotFound) {
		t.Errorf("Reconcile: %v, want ErrRouteNotFound", err)
	}
	if err := h.SetRoutes(ctx, missing, providers.CanaryWeight(10)); !errors.Is(err, providers.ErrRouteNotFound) {
		t.Errorf("SetRoutes: %v, want ErrRouteNotFound", err)
	}
	if _, err := h.GetRoutes(ctx, missing); !errors.Is(err, providers.ErrRouteNotFound) {
		t.Errorf("GetRoutes: %v, want ErrRouteNotFound", err)
	}
	if err := h.Finalize(ctx, missing); err != nil {
		t.Errorf("Finalize of a missing route: %v", err)
	}

	other := &gwv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: ns},
		Spec: gwv1.HTTPRouteSpec{Rules: []gwv1.HTTPRouteRule{{BackendRefs: []gwv1.HTTPBackendRef{
			serviceRef("frontend", 80, nil),
			{BackendRef: gwv1.BackendRef{BackendObjectReference: gwv1.BackendObjectReference{
				Name: "podinfo", Namespace: ptr.To(gwv1.Namespace("elsewhere")), Port: ptr.To(gwv1.PortNumber(9898))}}},
		}}}},
	}
	if err := env.Client.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	noApex := newCanary(t, ns, func(s *sluicev1.CanaryService) {
		s.Name = "podinfo"
		s.RouteRef = &sluicev1.RouteReference{Kind: "HTTPRoute", Name: "other"}
	})
	h.writes.Store(0)
	err := h.Reconcile(ctx, noApex)
	if !errors.Is(err, gatewayapi.ErrNoApexBackend) || !strings.Contains(err.Error(), "podinfo") {
		t.Errorf("Reconcile of a route without the apex: %v, want ErrNoApexBackend naming podinfo", err)
	}
	if _, err := h.GetRoutes(ctx, noApex); !errors.Is(err, gatewayapi.ErrNoApexBackend) {
		t.Errorf("GetRoutes of a route without the apex: %v, want ErrNoApexBackend", err)
	}

	newThreeRuleRoute(t, ns)
	canary := referenceCanary(t, ns, "shop")
	if err := h.Reconcile(ctx, canary); err != nil {
		t.Fatal(err)
	}
	before := getRoute(t, ns, "shop")
	for _, bad := range []providers.Weights{{Primary: 60, Canary: 60}, {Primary: 110, Canary: -10}, {}} {
		if err := h.SetRoutes(ctx, canary, bad); err == nil {
			t.Errorf("SetRoutes(%+v) accepted", bad)
		}
	}
	if after := getRoute(t, ns, "shop"); after.ResourceVersion != before.ResourceVersion {
		t.Error("invalid weights were written")
	}

	vs := newCanary(t, ns, func(s *sluicev1.CanaryService) {
		s.Name = "vs"
		s.RouteRef = &sluicev1.RouteReference{APIVersion: "networking.istio.io/v1", Kind: "VirtualService", Name: "shop"}
	})
	if err := h.Reconcile(ctx, vs); !errors.Is(err, gatewayapi.ErrInvalidSpec) {
		t.Errorf("Reconcile of a VirtualService routeRef: %v, want ErrInvalidSpec", err)
	}
	if n := h.writes.Load(); n != 0 {
		t.Errorf("%d writes, want none", n)
	}
}
