package gatewayapi

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

func prefix(v string) *gwv1.HTTPPathMatch {
	return &gwv1.HTTPPathMatch{Type: ptr.To(gwv1.PathMatchPathPrefix), Value: ptr.To(v)}
}

func exactPath(v string) *gwv1.HTTPPathMatch {
	return &gwv1.HTTPPathMatch{Type: ptr.To(gwv1.PathMatchExact), Value: ptr.To(v)}
}

func header(name, value string) gwv1.HTTPHeaderMatch {
	return gwv1.HTTPHeaderMatch{Type: ptr.To(gwv1.HeaderMatchExact), Name: gwv1.HTTPHeaderName(name), Value: value}
}

func regexHeader(name, value string) gwv1.HTTPHeaderMatch {
	return gwv1.HTTPHeaderMatch{Type: ptr.To(gwv1.HeaderMatchRegularExpression), Name: gwv1.HTTPHeaderName(name), Value: value}
}

// insider is the A/B match of the tests: header x-canary: insider, as convertMatches writes it.
var insider = gwv1.HTTPRouteMatch{Path: prefix("/"), Headers: []gwv1.HTTPHeaderMatch{header("x-canary", "insider")}}

func TestIntersectMatches(t *testing.T) {
	get := gwv1.HTTPMethodGet
	post := gwv1.HTTPMethodPost
	for _, tt := range []struct {
		name     string
		rule, ab []gwv1.HTTPRouteMatch
		want     []gwv1.HTTPRouteMatch
		err      bool
	}{
		{"rule without matches gets the A/B matches", nil, []gwv1.HTTPRouteMatch{insider}, []gwv1.HTTPRouteMatch{insider}, false},
		{"header added to the rule's path", []gwv1.HTTPRouteMatch{{Path: prefix("/api")}}, []gwv1.HTTPRouteMatch{insider},
			[]gwv1.HTTPRouteMatch{{Path: prefix("/api"), Headers: []gwv1.HTTPHeaderMatch{header("x-canary", "insider")}}}, false},
		{"the rule's headers first, then the A/B ones", []gwv1.HTTPRouteMatch{{Path: prefix("/"), Headers: []gwv1.HTTPHeaderMatch{header("x-beta", "yes")}}},
			[]gwv1.HTTPRouteMatch{insider},
			[]gwv1.HTTPRouteMatch{{Path: prefix("/"), Headers: []gwv1.HTTPHeaderMatch{header("x-beta", "yes"), header("x-canary", "insider")}}}, false},
		{"the same header condition once (names case-insensitive)", []gwv1.HTTPRouteMatch{{Path: prefix("/"), Headers: []gwv1.HTTPHeaderMatch{header("X-Canary", "insider")}}},
			[]gwv1.HTTPRouteMatch{insider},
			[]gwv1.HTTPRouteMatch{{Path: prefix("/"), Headers: []gwv1.HTTPHeaderMatch{header("X-Canary", "insider")}}}, false},
		{"two exact values of a header match nothing", []gwv1.HTTPRouteMatch{{Path: prefix("/"), Headers: []gwv1.HTTPHeaderMatch{header("x-canary", "always")}}},
			[]gwv1.HTTPRouteMatch{insider}, nil, false},
		{"an exact value and a regex on one header cannot be combined", []gwv1.HTTPRouteMatch{{Path: prefix("/"), Headers: []gwv1.HTTPHeaderMatch{regexHeader("x-canary", "^in")}}},
			[]gwv1.HTTPRouteMatch{insider}, nil, true},
		{"the narrower prefix", []gwv1.HTTPRouteMatch{{Path: prefix("/api")}}, []gwv1.HTTPRouteMatch{{Path: prefix("/api/v2")}},
			[]gwv1.HTTPRouteMatch{{Path: prefix("/api/v2")}}, false},
		{"an exact path under the prefix", []gwv1.HTTPRouteMatch{{Path: exactPath("/api/users")}}, []gwv1.HTTPRouteMatch{{Path: prefix("/api")}},
			[]gwv1.HTTPRouteMatch{{Path: exactPath("/api/users")}}, false},
		{"prefixes match whole segments", []gwv1.HTTPRouteMatch{{Path: prefix("/api")}}, []gwv1.HTTPRouteMatch{{Path: prefix("/apiv2")}}, nil, false},
		{"disjoint paths: no A/B rule", []gwv1.HTTPRouteMatch{{Path: prefix("/static")}}, []gwv1.HTTPRouteMatch{{Path: prefix("/api")}}, nil, false},
		{"regex paths cannot be intersected", []gwv1.HTTPRouteMatch{{Path: &gwv1.HTTPPathMatch{Type: ptr.To(gwv1.PathMatchRegularExpression), Value: ptr.To("/a.*")}}},
			[]gwv1.HTTPRouteMatch{{Path: prefix("/api")}}, nil, true},
		{"methods: one set", []gwv1.HTTPRouteMatch{{Path: prefix("/"), Method: &get}}, []gwv1.HTTPRouteMatch{insider},
			[]gwv1.HTTPRouteMatch{{Path: prefix("/"), Method: &get, Headers: []gwv1.HTTPHeaderMatch{header("x-canary", "insider")}}}, false},
		{"methods: different ones match nothing", []gwv1.HTTPRouteMatch{{Path: prefix("/"), Method: &get}}, []gwv1.HTTPRouteMatch{{Path: prefix("/"), Method: &post}}, nil, false},
		{"every rule match with every A/B match, disjoint ones left out",
			[]gwv1.HTTPRouteMatch{{Path: prefix("/api")}, {Path: prefix("/static")}},
			[]gwv1.HTTPRouteMatch{insider, {Path: prefix("/api/v2")}},
			[]gwv1.HTTPRouteMatch{
				{Path: prefix("/api"), Headers: []gwv1.HTTPHeaderMatch{header("x-canary", "insider")}},
				{Path: prefix("/api/v2")},
				{Path: prefix("/static"), Headers: []gwv1.HTTPHeaderMatch{header("x-canary", "insider")}},
			}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := intersectMatches(tt.rule, tt.ab)
			if tt.err {
				if !errors.Is(err, ErrInvalidSpec) {
					t.Fatalf("err = %v, want ErrInvalidSpec", err)
				}
				t.Log(err)
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %s, %v\nwant %s", describe(got), err, describe(tt.want))
			}
		})
	}
}

func describe(ms []gwv1.HTTPRouteMatch) string {
	var out []string
	for _, m := range ms {
		t, v := pathOf(m.Path)
		s := fmt.Sprintf("%s %s", t, v)
		if m.Method != nil {
			s += " " + string(*m.Method)
		}
		for _, h := range m.Headers {
			s += fmt.Sprintf(" %s=%s", h.Name, h.Value)
		}
		out = append(out, "{"+s+"}")
	}
	return fmt.Sprint(out)
}

// rank orders matches as Gateway API's precedence does within one route (higher wins): exact
// path, then prefix length, then method, then header count, then query parameter count.
func rank(m gwv1.HTTPRouteMatch) []int {
	t, v := pathOf(m.Path)
	exact, length := 0, 0
	switch t {
	case gwv1.PathMatchExact:
		exact = 1
	case gwv1.PathMatchPathPrefix:
		length = len(v)
	}
	method := 0
	if m.Method != nil {
		method = 1
	}
	return []int{exact, length, method, len(m.Headers), len(m.QueryParams)}
}

// TestABRulePrecedence checks the claim of withABRules: a combined match ranks at least as high as
// the rule match it narrows, so with the A/B rule listed first every request matching both goes
// to the A/B rule.
func TestABRulePrecedence(t *testing.T) {
	get := gwv1.HTTPMethodGet
	rules := []gwv1.HTTPRouteMatch{
		{Path: prefix("/")}, {Path: prefix("/api")}, {Path: exactPath("/api/login")}, {Path: prefix("/api"), Method: &get},
		{Path: prefix("/"), Headers: []gwv1.HTTPHeaderMatch{header("x-beta", "yes"), header("x-tenant", "a")}},
		{Path: prefix("/"), QueryParams: []gwv1.HTTPQueryParamMatch{{Type: ptr.To(gwv1.QueryParamMatchExact), Name: "v", Value: "2"}}},
	}
	abs := []gwv1.HTTPRouteMatch{
		insider, {Path: prefix("/api/v2")}, {Path: prefix("/"), Method: &get},
		{Path: prefix("/"), QueryParams: []gwv1.HTTPQueryParamMatch{{Type: ptr.To(gwv1.QueryParamMatchExact), Name: "canary", Value: "1"}}},
		{Path: prefix("/api"), Headers: []gwv1.HTTPHeaderMatch{header("x-beta", "yes")}},
	}
	for _, r := range rules {
		for _, a := range abs {
			got, err := intersectMatches([]gwv1.HTTPRouteMatch{r}, []gwv1.HTTPRouteMatch{a})
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range got {
				if slices.Compare(rank(m), rank(r)) < 0 {
					t.Errorf("%s ranks below the rule match %s", describe([]gwv1.HTTPRouteMatch{m}), describe([]gwv1.HTTPRouteMatch{r}))
				}
			}
		}
	}
}

func TestWithABRules(t *testing.T) {
	s := services{namespace: "ns", names: (&sluicev1.Canary{Spec: sluicev1.CanarySpec{TargetRef: sluicev1.TargetReference{Name: "app"}}}).ServiceNames()}
	port := ptr.To(gwv1.PortNumber(80))
	apex := serviceBackend("app", port, 1)
	other := serviceBackend("other", port, 1)
	rewrite := gwv1.HTTPRouteFilter{Type: gwv1.HTTPRouteFilterURLRewrite, URLRewrite: &gwv1.HTTPURLRewriteFilter{
		Path: &gwv1.HTTPPathModifier{Type: gwv1.PrefixMatchHTTPPathModifier, ReplacePrefixMatch: ptr.To("/")}}}
	rules := []gwv1.HTTPRouteRule{
		{Matches: []gwv1.HTTPRouteMatch{{Path: prefix("/api")}}, Filters: []gwv1.HTTPRouteFilter{rewrite}, BackendRefs: []gwv1.HTTPBackendRef{apex}},
		{Matches: []gwv1.HTTPRouteMatch{{Path: prefix("/static")}}, BackendRefs: []gwv1.HTTPBackendRef{other}},
		{Matches: []gwv1.HTTPRouteMatch{{Path: prefix("/")}}, BackendRefs: []gwv1.HTTPBackendRef{other, apex}},
	}
	query := gwv1.HTTPRouteMatch{Path: prefix("/"), QueryParams: []gwv1.HTTPQueryParamMatch{{Type: ptr.To(gwv1.QueryParamMatchExact), Name: "canary", Value: "1"}}}
	got, err := s.withABRules(rules, []gwv1.HTTPRouteMatch{insider, query})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range got {
		names = append(names, string(ptr.Deref(r.Name, "")))
	}
	// The rewriting rule gets one A/B rule per match; the shared rule one with both matches.
	if want := []string{"sluice-ab-0-0", "sluice-ab-0-1", "", "", "sluice-ab-2", ""}; !slices.Equal(names, want) {
		t.Fatalf("rule names %q, want %q", names, want)
	}
	for _, i := range []int{0, 1} {
		if len(got[i].Matches) != 1 || *got[i].Matches[0].Path.Value != "/api" || !reflect.DeepEqual(got[i].Filters, rules[0].Filters) {
			t.Errorf("A/B rule %d = %+v, want one /api match and the rewrite", i, got[i])
		}
		if w := weightsOf(got[i]); w["app-primary"][0] != 0 || w["app-canary"][0] != 100 {
			t.Errorf("A/B rule %d backends %v, want app-primary 0, app-canary 100", i, w)
		}
	}
	// In the shared rule, other keeps its share (1 of 2 before: 100 of 200 now).
	if w := weightsOf(got[4]); w["other"][0] != 100 || w["app-primary"][0] != 0 || w["app-canary"][0] != 100 || len(got[4].Matches) != 2 {
		t.Errorf("A/B rule of the shared rule: backends %v, matches %s", w, describe(got[4].Matches))
	}
	if !reflect.DeepEqual(withoutABRules(got), rules) {
		t.Error("withoutABRules does not give back the rules")
	}

	// An A/B match narrowing the rewritten prefix would change the rewrite: refused.
	if _, err := s.withABRules(rules, []gwv1.HTTPRouteMatch{{Path: prefix("/api/v2")}}); !errors.Is(err, ErrInvalidSpec) {
		t.Errorf("narrowing a ReplacePrefixMatch rule: %v, want ErrInvalidSpec", err)
	}
	// A route that would exceed 16 rules is refused with a message saying so.
	many := slices.Repeat(rules[2:3], 9)
	if _, err := s.withABRules(many, []gwv1.HTTPRouteMatch{insider}); !errors.Is(err, ErrInvalidSpec) {
		t.Errorf("18 rules: %v, want ErrInvalidSpec", err)
	}
}
