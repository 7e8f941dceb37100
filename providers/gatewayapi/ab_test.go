package gatewayapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/providers"
	"sluice.dev/sluice/providers/gatewayapi"
)

// insiderMatch is the A/B match of the tests: requests with x-canary: insider.
var insiderMatch = sluicev1.HTTPMatchRequest{Headers: map[string]sluicev1.StringMatch{"x-canary": {Exact: ptr.To("insider")}}}

// newABCanary creates a Canary for Deployment podinfo running A/B tests of 3 iterations on match.
func newABCanary(t *testing.T, ns string, match []sluicev1.HTTPMatchRequest, svc func(*sluicev1.CanaryService)) *sluicev1.Canary {
	t.Helper()
	canary := &sluicev1.Canary{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "podinfo-", Namespace: ns},
		Spec: sluicev1.CanarySpec{
			TargetRef: sluicev1.TargetReference{Kind: "Deployment", Name: "podinfo"},
			Service:   sluicev1.CanaryService{Port: 9898},
			Analysis:  sluicev1.CanaryAnalysis{Iterations: 3, Match: match},
		},
	}
	if svc != nil {
		svc(&canary.Spec.Service)
	}
	if err := env.Client.Create(context.Background(), canary); err != nil {
		t.Fatalf("creating Canary: %v", err)
	}
	return canary
}

// ruleNames lists the rules' names ("" for none).
func ruleNames(rules []gwv1.HTTPRouteRule) []string {
	var out []string
	for _, r := range rules {
		out = append(out, string(ptr.Deref(r.Name, "")))
	}
	return out
}

// exactHeader is a header match as stored (type Exact spelled out).
func exactHeader(name, value string) gwv1.HTTPHeaderMatch {
	return gwv1.HTTPHeaderMatch{Type: ptr.To(gwv1.HeaderMatchExact), Name: gwv1.HTTPHeaderName(name), Value: value}
}

func pathPrefix(v string) *gwv1.HTTPPathMatch {
	return &gwv1.HTTPPathMatch{Type: ptr.To(gwv1.PathMatchPathPrefix), Value: ptr.To(v)}
}

func TestABGeneratedRoute(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	ns := env.Namespace(t)
	canary := newABCanary(t, ns, []sluicev1.HTTPMatchRequest{insiderMatch}, func(s *sluicev1.CanaryService) {
		s.Timeout = "5s"
		s.Match = []sluicev1.HTTPMatchRequest{{URI: &sluicev1.StringMatch{Prefix: ptr.To("/api")}}}
	})
	if err := h.SetABRoutes(ctx, canary, true); !errors.Is(err, providers.ErrRouteNotFound) {
		t.Fatalf("SetABRoutes before Reconcile: %v, want ErrRouteNotFound", err)
	}
	if err := h.Reconcile(ctx, canary); err != nil {
		t.Fatal(err)
	}
	plain := getRoute(t, ns, "podinfo").Spec.Rules
	if on, err := h.GetABRoutes(ctx, canary); err != nil || on {
		t.Fatalf("GetABRoutes of a new route = %v, %v; want false", on, err)
	}

	if err := h.SetABRoutes(ctx, canary, true); err != nil {
		t.Fatal(err)
	}
	rules := getRoute(t, ns, "podinfo").Spec.Rules
	if names := ruleNames(rules); !slices.Equal(names, []string{"sluice-ab-0", ""}) {
		t.Fatalf("rules %q, want the A/B rule before the generated rule", names)
	}
	ab, main := rules[0], rules[1]
	wantMatches := []gwv1.HTTPRouteMatch{{Path: pathPrefix("/api"), Headers: []gwv1.HTTPHeaderMatch{exactHeader("x-canary", "insider")}}}
	if !reflect.DeepEqual(ab.Matches, wantMatches) {
		t.Errorf("A/B rule matches %+v, want /api with x-canary: insider", ab.Matches)
	}
	if w := pairOf(t, ab, 9898, nil); w != providers.CanaryWeight(100) {
		t.Errorf("A/B rule weights %+v, want everything on the canary", w)
	}
	if !reflect.DeepEqual(ab.Timeouts, main.Timeouts) || !reflect.DeepEqual(main, plain[0]) {
		t.Errorf("A/B rule timeouts %+v (rule %+v), or the generated rule changed", ab.Timeouts, main.Timeouts)
	}
	if w, err := h.GetRoutes(ctx, canary); err != nil || w != providers.CanaryWeight(0) {
		t.Fatalf("GetRoutes with A/B routing on = %+v, %v; want 100/0 (the weighted rule)", w, err)
	}
	if on, err := h.GetABRoutes(ctx, canary); err != nil || !on {
		t.Fatalf("GetABRoutes = %v, %v; want true", on, err)
	}
	h.noWrites(t, "Reconcile with A/B routing on", func() error { return h.Reconcile(ctx, canary) })
	h.noWrites(t, "SetABRoutes on again", func() error { return h.SetABRoutes(ctx, canary, true) })
	h.noWrites(t, "SetRoutes to the same weights", func() error { return h.SetRoutes(ctx, canary, providers.CanaryWeight(0)) })

	// Weights and A/B routing are independent: SetRoutes leaves the A/B rule alone.
	if err := h.SetRoutes(ctx, canary, providers.CanaryWeight(20)); err != nil {
		t.Fatal(err)
	}
	rules = getRoute(t, ns, "podinfo").Spec.Rules
	if len(rules) != 2 || !reflect.DeepEqual(rules[0], ab) || pairOf(t, rules[1], 9898, nil) != providers.CanaryWeight(20) {
		t.Fatalf("after SetRoutes(20): %+v", rules)
	}
	if err := h.SetRoutes(ctx, canary, providers.CanaryWeight(0)); err != nil {
		t.Fatal(err)
	}

	// Reconcile follows a change of spec.analysis.match.
	canary.Spec.Analysis.Match = []sluicev1.HTTPMatchRequest{{Headers: map[string]sluicev1.StringMatch{"x-canary": {Exact: ptr.To("beta")}}}}
	if err := h.Reconcile(ctx, canary); err != nil {
		t.Fatal(err)
	}
	if got := getRoute(t, ns, "podinfo").Spec.Rules[0].Matches[0].Headers; !reflect.DeepEqual(got, []gwv1.HTTPHeaderMatch{exactHeader("x-canary", "beta")}) {
		t.Fatalf("A/B rule headers after a spec change: %+v", got)
	}

	if err := h.SetABRoutes(ctx, canary, false); err != nil {
		t.Fatal(err)
	}
	if got := getRoute(t, ns, "podinfo").Spec.Rules; !reflect.DeepEqual(got, plain) {
		t.Fatalf("rules after SetABRoutes(off):\n got %+v\nwant %+v", got, plain)
	}
	h.noWrites(t, "SetABRoutes off again", func() error { return h.SetABRoutes(ctx, canary, false) })

	// A spec without an A/B match any more: Reconcile removes A/B rules left behind.
	if err := h.SetABRoutes(ctx, canary, true); err != nil {
		t.Fatal(err)
	}
	canary.Spec.Analysis.Match = nil
	if err := h.Reconcile(ctx, canary); err != nil {
		t.Fatal(err)
	}
	if got := getRoute(t, ns, "podinfo").Spec.Rules; !reflect.DeepEqual(got, plain) {
		t.Fatalf("rules after the A/B match left the spec: %+v", got)
	}
}

// TestABReferenceThreeRules turns A/B routing on and off on the user's three-rule route: rule A
// (/api, ReplacePrefixMatch rewrite, timeout) gets one A/B rule per A/B match keeping its path,
// rule C (x-canary: always, backend filter) one for the only satisfiable combination, rule B
// nothing; the user's rules stay byte-identical, and Finalize restores them exactly.
func TestABReferenceThreeRules(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	ns := env.Namespace(t)
	orig := newThreeRuleRoute(t, ns)
	canary := newABCanary(t, ns, []sluicev1.HTTPMatchRequest{
		insiderMatch,
		{QueryParams: map[string]sluicev1.StringMatch{"canary": {Exact: ptr.To("1")}}},
	}, func(s *sluicev1.CanaryService) {
		s.RouteRef = &sluicev1.RouteReference{APIVersion: "gateway.networking.k8s.io/v1", Kind: "HTTPRoute", Name: "shop"}
	})
	if err := h.Reconcile(ctx, canary); err != nil {
		t.Fatal(err)
	}
	if err := h.SetRoutes(ctx, canary, providers.CanaryWeight(0)); err != nil {
		t.Fatal(err)
	}
	split := getRoute(t, ns, "shop")

	if err := h.SetABRoutes(ctx, canary, true); err != nil {
		t.Fatal(err)
	}
	route := getRoute(t, ns, "shop")
	rules := route.Spec.Rules
	if names := ruleNames(rules); !slices.Equal(names, []string{"sluice-ab-0-0", "sluice-ab-0-1", "", "static", "sluice-ab-2", ""}) {
		t.Fatalf("rules %q", names)
	}
	user := &gwv1.HTTPRoute{ObjectMeta: route.ObjectMeta, Spec: route.Spec}
	user.Spec.Rules = []gwv1.HTTPRouteRule{rules[2], rules[3], rules[5]}
	checkThreeRules(t, orig, user, providers.CanaryWeight(0))
	if !reflect.DeepEqual(user.Spec.Rules, split.Spec.Rules) {
		t.Fatal("SetABRoutes changed the user's rules")
	}
	canaryQuery := gwv1.HTTPQueryParamMatch{Type: ptr.To(gwv1.QueryParamMatchExact), Name: "canary", Value: "1"}
	apiPath := orig.Spec.Rules[ruleA].Matches[0].Path
	for i, want := range []struct {
		rule  int
		match gwv1.HTTPRouteMatch
	}{
		{ruleA, gwv1.HTTPRouteMatch{Path: apiPath, Headers: []gwv1.HTTPHeaderMatch{exactHeader("x-canary", "insider")}}},
		{ruleA, gwv1.HTTPRouteMatch{Path: apiPath, QueryParams: []gwv1.HTTPQueryParamMatch{canaryQuery}}},
		{}, {},
		{ruleC, gwv1.HTTPRouteMatch{Path: pathPrefix("/"), Headers: orig.Spec.Rules[ruleC].Matches[0].Headers, QueryParams: []gwv1.HTTPQueryParamMatch{canaryQuery}}},
	} {
		if i == 2 || i == 3 {
			continue
		}
		got, from := rules[i], orig.Spec.Rules[want.rule]
		if !reflect.DeepEqual(got.Matches, []gwv1.HTTPRouteMatch{want.match}) {
			t.Errorf("A/B rule %d matches %+v, want %+v", i, got.Matches, want.match)
		}
		if !reflect.DeepEqual(got.Filters, from.Filters) || !reflect.DeepEqual(got.Timeouts, from.Timeouts) {
			t.Errorf("A/B rule %d lost the filters or timeouts of rule %d", i, want.rule)
		}
		if w := pairOf(t, got, 9898, from.BackendRefs[0].Filters); w != providers.CanaryWeight(100) {
			t.Errorf("A/B rule %d weights %+v, want everything on the canary", i, w)
		}
	}
	var recorded []gwv1.HTTPRouteRule
	if err := json.Unmarshal([]byte(route.Annotations[gatewayapi.AnnotationOriginalRules]), &recorded); err != nil ||
		!reflect.DeepEqual(recorded, orig.Spec.Rules) {
		t.Fatalf("annotation %s does not hold the original rules: %v", gatewayapi.AnnotationOriginalRules, err)
	}
	if w, err := h.GetRoutes(ctx, canary); err != nil || w != providers.CanaryWeight(0) {
		t.Fatalf("GetRoutes = %+v, %v; want 100/0", w, err)
	}
	h.noWrites(t, "Reconcile with A/B routing on", func() error { return h.Reconcile(ctx, canary) })
	h.noWrites(t, "SetABRoutes on again", func() error { return h.SetABRoutes(ctx, canary, true) })

	// Someone edits an A/B rule: Reconcile puts it back.
	rules = route.DeepCopy().Spec.Rules
	route.Spec.Rules[0].Matches[0].Headers[0].Value = "everyone"
	if err := env.Client.Update(ctx, route); err != nil {
		t.Fatal(err)
	}
	if err := h.Reconcile(ctx, canary); err != nil {
		t.Fatal(err)
	}
	if got := getRoute(t, ns, "shop").Spec.Rules; !reflect.DeepEqual(got, rules) {
		t.Fatalf("Reconcile did not restore the edited A/B rule: %+v", got[0].Matches)
	}

	if err := h.SetABRoutes(ctx, canary, false); err != nil {
		t.Fatal(err)
	}
	if got := getRoute(t, ns, "shop").Spec.Rules; !reflect.DeepEqual(got, split.Spec.Rules) {
		t.Fatalf("rules after SetABRoutes(off):\n got %+v\nwant %+v", got, split.Spec.Rules)
	}
	if on, err := h.GetABRoutes(ctx, canary); err != nil || on {
		t.Fatalf("GetABRoutes after off = %v, %v", on, err)
	}

	if err := h.SetABRoutes(ctx, canary, true); err != nil {
		t.Fatal(err)
	}
	if err := h.Finalize(ctx, canary); err != nil {
		t.Fatal(err)
	}
	route = getRoute(t, ns, "shop")
	if !reflect.DeepEqual(route.Spec.Rules, orig.Spec.Rules) {
		t.Fatalf("Finalize with A/B routing on did not restore the rules:\n got %+v\nwant %+v", route.Spec.Rules, orig.Spec.Rules)
	}
	if _, ok := route.Annotations[gatewayapi.AnnotationOriginalRules]; ok {
		t.Fatalf("Finalize left annotation %s", gatewayapi.AnnotationOriginalRules)
	}
}

// TestABReferenceBeforeSplit: A/B routing on a route Sluice never split records the original
// rules, leaves the user's rules as written, and off gives them back.
func TestABReferenceBeforeSplit(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	ns := env.Namespace(t)
	orig := newThreeRuleRoute(t, ns)
	canary := newABCanary(t, ns, []sluicev1.HTTPMatchRequest{insiderMatch}, func(s *sluicev1.CanaryService) {
		s.RouteRef = &sluicev1.RouteReference{Kind: "HTTPRoute", Name: "shop"}
	})
	if err := h.SetABRoutes(ctx, canary, true); err != nil {
		t.Fatal(err)
	}
	route := getRoute(t, ns, "shop")
	// Rule C matches x-canary: always, which no request with x-canary: insider has: no A/B rule.
	if names := ruleNames(route.Spec.Rules); !slices.Equal(names, []string{"sluice-ab-0", "", "static", ""}) {
		t.Fatalf("rules %q", names)
	}
	if !reflect.DeepEqual(route.Spec.Rules[1:], orig.Spec.Rules) {
		t.Fatal("the user's rules changed")
	}
	if _, ok := route.Annotations[gatewayapi.AnnotationOriginalRules]; !ok {
		t.Fatal("no original rules recorded")
	}
	if w, err := h.GetRoutes(ctx, canary); err != nil || w != providers.CanaryWeight(0) {
		t.Fatalf("GetRoutes = %+v, %v; want 100/0", w, err)
	}
	if err := h.SetABRoutes(ctx, canary, false); err != nil {
		t.Fatal(err)
	}
	if err := h.Finalize(ctx, canary); err != nil {
		t.Fatal(err)
	}
	route = getRoute(t, ns, "shop")
	if _, ok := route.Annotations[gatewayapi.AnnotationOriginalRules]; ok || !reflect.DeepEqual(route.Spec.Rules, orig.Spec.Rules) {
		t.Fatalf("after off and Finalize: annotation kept %v, rules %+v", ok, route.Spec.Rules)
	}
}

func TestABReferenceErrors(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	ns := env.Namespace(t)
	newThreeRuleRoute(t, ns)
	// /api/v2 narrows rule A's /api, whose ReplacePrefixMatch rewrite would then change.
	canary := newABCanary(t, ns, []sluicev1.HTTPMatchRequest{{URI: &sluicev1.StringMatch{Prefix: ptr.To("/api/v2")}}}, func(s *sluicev1.CanaryService) {
		s.RouteRef = &sluicev1.RouteReference{Kind: "HTTPRoute", Name: "shop"}
	})
	h.writes.Store(0)
	err := h.SetABRoutes(ctx, canary, true)
	if !errors.Is(err, gatewayapi.ErrInvalidSpec) || !strings.Contains(err.Error(), "ReplacePrefixMatch") {
		t.Fatalf("SetABRoutes = %v, want ErrInvalidSpec about ReplacePrefixMatch", err)
	}
	if n := h.writes.Load(); n != 0 {
		t.Fatalf("%d writes, want none", n)
	}
	// Off (and GetABRoutes) work whatever the match.
	h.noWrites(t, "SetABRoutes off", func() error { return h.SetABRoutes(ctx, canary, false) })
	if on, err := h.GetABRoutes(ctx, canary); err != nil || on {
		t.Fatalf("GetABRoutes = %v, %v", on, err)
	}
}
