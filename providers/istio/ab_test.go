package istio

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/protoadapt"
	networkingv1 "istio.io/api/networking/v1"
	istionetv1 "istio.io/client-go/pkg/apis/networking/v1"
	"k8s.io/utils/ptr"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/providers"
	"sluice.dev/sluice/test/testenv"
)

// insiderMatch is the A/B match of the tests: requests with x-canary: insider.
var insiderMatch = sluicev1.HTTPMatchRequest{Headers: map[string]sluicev1.StringMatch{"x-canary": {Exact: ptr.To("insider")}}}

// abTest makes the Canary run A/B tests of 3 iterations on match.
func abTest(match ...sluicev1.HTTPMatchRequest) func(*sluicev1.Canary) {
	return func(c *sluicev1.Canary) {
		c.Spec.Analysis = sluicev1.CanaryAnalysis{Interval: "1m", Iterations: 3, Match: match}
	}
}

func istioMatches(t *testing.T, js string) []*networkingv1.HTTPMatchRequest {
	t.Helper()
	route := &networkingv1.HTTPRoute{}
	if err := istioJSON.Unmarshal(strings.NewReader(`{"match": `+js+`}`), protoadapt.MessageV1Of(route)); err != nil {
		t.Fatal(err)
	}
	return route.Match
}

func TestIntersectMatches(t *testing.T) {
	insider := `{"headers": {"x-canary": {"exact": "insider"}}}`
	for _, tt := range []struct {
		name, route, ab, want string
		keepURI, err          bool
	}{
		{"route without match gets the A/B matches", `[]`, `[` + insider + `]`, `[` + insider + `]`, false, false},
		{"header added, other fields kept", `[{"uri": {"prefix": "/api"}, "port": 80, "withoutHeaders": {"x-debug": {"exact": "1"}}}]`, `[` + insider + `]`,
			`[{"uri": {"prefix": "/api"}, "port": 80, "withoutHeaders": {"x-debug": {"exact": "1"}}, "headers": {"x-canary": {"exact": "insider"}}}]`, false, false},
		{"two exact values of one header match nothing", `[{"headers": {"x-canary": {"exact": "true"}}}]`, `[` + insider + `]`, `[]`, false, false},
		{"the same header once", `[{"headers": {"x-canary": {"exact": "insider"}}}]`, `[` + insider + `]`, `[` + insider + `]`, false, false},
		{"a regex and an exact value on one header", `[{"headers": {"x-canary": {"regex": "in.*"}}}]`, `[` + insider + `]`, ``, false, true},
		{"the narrower URI prefix", `[{"uri": {"prefix": "/api"}}]`, `[{"uri": {"prefix": "/api/v2"}}]`, `[{"uri": {"prefix": "/api/v2"}}]`, false, false},
		{"an exact URI within the prefix", `[{"uri": {"exact": "/api/login"}}]`, `[{"uri": {"prefix": "/api"}}]`, `[{"uri": {"exact": "/api/login"}}]`, false, false},
		{"disjoint URIs", `[{"uri": {"prefix": "/static"}}]`, `[{"uri": {"prefix": "/api"}}]`, `[]`, false, false},
		{"a URI the route rewrites cannot be narrowed", `[{"uri": {"prefix": "/api"}}]`, `[{"uri": {"prefix": "/api/v2"}}]`, ``, true, true},
		{"a URI the route rewrites, narrowed by a header only", `[{"uri": {"prefix": "/api"}}]`, `[` + insider + `]`,
			`[{"uri": {"prefix": "/api"}, "headers": {"x-canary": {"exact": "insider"}}}]`, true, false},
		{"a URI matched ignoring case", `[{"uri": {"prefix": "/api"}, "ignoreUriCase": true}]`, `[{"uri": {"prefix": "/api/v2"}}]`, ``, false, true},
		{"every route match with every A/B match",
			`[{"uri": {"prefix": "/api"}}, {"headers": {"x-canary": {"exact": "true"}}}]`, `[` + insider + `, {"queryParams": {"v": {"exact": "2"}}}]`,
			`[{"uri": {"prefix": "/api"}, "headers": {"x-canary": {"exact": "insider"}}}, {"uri": {"prefix": "/api"}, "queryParams": {"v": {"exact": "2"}}},
			  {"headers": {"x-canary": {"exact": "true"}}, "queryParams": {"v": {"exact": "2"}}}]`, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := intersectMatches(istioMatches(t, tt.route), istioMatches(t, tt.ab), tt.keepURI)
			if tt.err {
				if !errors.Is(err, ErrInvalidSpec) {
					t.Fatalf("err = %v, want ErrInvalidSpec", err)
				}
				t.Log(err)
				return
			}
			want := istioMatches(t, tt.want)
			if err != nil || !slices.EqualFunc(got, want, func(a, b *networkingv1.HTTPMatchRequest) bool { return proto.Equal(a, b) }) {
				t.Fatalf("got %v, %v\nwant %v", got, err, want)
			}
		})
	}
}

// wantGeneratedAB is fullService's VirtualService at 100/0 with the A/B route of x-canary: insider.
func wantGeneratedAB(t *testing.T) *networkingv1.VirtualService {
	t.Helper()
	vs := wantGenerated(t, 0)
	ab := proto.CloneOf(vs.Http[0])
	ab.Name = "sluice-ab-0"
	ab.Match = istioMatches(t, `[
	  {"headers": {"x-user": {"exact": "beta"}, "x-canary": {"exact": "insider"}}},
	  {"uri": {"prefix": "/api"}, "method": {"regex": "GET|HEAD"}, "queryParams": {"v": {"exact": "2"}}, "headers": {"x-canary": {"exact": "insider"}}}
	]`)
	ab.Route[0].Weight, ab.Route[1].Weight = 0, 100
	vs.Http = append([]*networkingv1.HTTPRoute{ab}, vs.Http...)
	return vs
}

// TestABGenerated: A/B routing on the generated VirtualService adds the A/B route before the
// generated one (every field copied, matches combined); weights and A/B routing are independent;
// off gives back the plain VirtualService.
func TestABGenerated(t *testing.T) {
	testenv.Require(t, env)
	ctx := t.Context()
	ns := env.Namespace(t)
	canary := newCanary(t, ns, func(c *sluicev1.Canary) {
		webCanary(c)
		abTest(insiderMatch)(c)
	})
	r := New(env.Client)
	if err := r.Reconcile(ctx, canary); err != nil {
		t.Fatal(err)
	}
	if on, err := r.GetABRoutes(ctx, canary); err != nil || on {
		t.Fatalf("GetABRoutes = %v, %v; want false", on, err)
	}
	if err := r.SetABRoutes(ctx, canary, true); err != nil {
		t.Fatal(err)
	}
	vs := getVS(t, ns, "web")
	protoDiff(t, "VirtualService with A/B routing", &vs.Spec, wantGeneratedAB(t))
	mustWeights(t, r, canary, providers.CanaryWeight(0))
	if on, err := r.GetABRoutes(ctx, canary); err != nil || !on {
		t.Fatalf("GetABRoutes = %v, %v; want true", on, err)
	}
	for what, f := range map[string]func() error{
		"Reconcile":             func() error { return r.Reconcile(ctx, canary) },
		"SetABRoutes on again":  func() error { return r.SetABRoutes(ctx, canary, true) },
		"SetRoutes at the same": func() error { return r.SetRoutes(ctx, canary, providers.CanaryWeight(0)) },
	} {
		if err := f(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if getVS(t, ns, "web").ResourceVersion != vs.ResourceVersion {
			t.Errorf("%s wrote an unchanged VirtualService", what)
		}
	}

	if err := r.SetRoutes(ctx, canary, providers.CanaryWeight(30)); err != nil {
		t.Fatal(err)
	}
	cur := getVS(t, ns, "web")
	protoDiff(t, "A/B route after SetRoutes(30)", cur.Spec.Http[0], wantGeneratedAB(t).Http[0])
	protoDiff(t, "generated route after SetRoutes(30)", cur.Spec.Http[1], wantGenerated(t, 30).Http[0])
	mustWeights(t, r, canary, providers.CanaryWeight(30))
	if err := r.SetRoutes(ctx, canary, providers.CanaryWeight(0)); err != nil {
		t.Fatal(err)
	}

	if err := r.SetABRoutes(ctx, canary, false); err != nil {
		t.Fatal(err)
	}
	protoDiff(t, "VirtualService after SetABRoutes(off)", &getVS(t, ns, "web").Spec, wantGenerated(t, 0))

	// A/B routes left behind when the spec no longer has an A/B match: Reconcile removes them.
	if err := r.SetABRoutes(ctx, canary, true); err != nil {
		t.Fatal(err)
	}
	canary.Spec.Analysis.Match = nil
	if err := r.Reconcile(ctx, canary); err != nil {
		t.Fatal(err)
	}
	protoDiff(t, "VirtualService after the A/B match left the spec", &getVS(t, ns, "web").Spec, wantGenerated(t, 0))
}

// TestABReferenceSeed turns A/B routing on and off on the seed's VirtualService: the header route
// (x-canary: "true") gets an A/B route only for the A/B match it can combine with, the weighted
// route one for both; the user's routes change only in their managed destinations, and Finalize
// with A/B routing on restores the VirtualService exactly.
func TestABReferenceSeed(t *testing.T) {
	testenv.Require(t, env)
	ctx := t.Context()
	ns := env.Namespace(t)
	orig, _ := createSeed(t, ns)
	origRaw := rawVirtualService(t, ns, "user-service")
	beta := sluicev1.HTTPMatchRequest{Headers: map[string]sluicev1.StringMatch{"x-user": {Exact: ptr.To("beta")}}}
	canary := newCanary(t, ns, func(c *sluicev1.Canary) {
		referenceVS("user-service")(c)
		abTest(insiderMatch, beta)(c)
	})
	r := New(env.Client)
	if err := r.SetRoutes(ctx, canary, providers.CanaryWeight(0)); err != nil {
		t.Fatal(err)
	}
	split := getVS(t, ns, "user-service")

	if err := r.SetABRoutes(ctx, canary, true); err != nil {
		t.Fatal(err)
	}
	cur := getVS(t, ns, "user-service")
	var names []string
	for _, h := range cur.Spec.Http {
		names = append(names, h.GetName())
	}
	if !slices.Equal(names, []string{"sluice-ab-0", "", "sluice-ab-1", ""}) {
		t.Fatalf("routes %q, want an A/B route before each", names)
	}
	user := cur.DeepCopy()
	user.Spec.Http = withoutABRoutes(user.Spec.Http)
	protoDiff(t, "the user's routes", &user.Spec, &split.Spec)
	assertOnlyWeightsChanged(t, orig, user, providers.CanaryWeight(0))

	for _, tt := range []struct {
		at          int
		name, match string
	}{
		{0, "sluice-ab-0", `[{"headers": {"x-canary": {"exact": "true"}, "x-user": {"exact": "beta"}}}]`},
		{2, "sluice-ab-1", `[{"headers": {"x-canary": {"exact": "insider"}}}, {"headers": {"x-user": {"exact": "beta"}}}]`},
	} {
		want := proto.CloneOf(cur.Spec.Http[tt.at+1]) // the route it copies, retries and timeout included
		want.Name, want.Match = tt.name, istioMatches(t, tt.match)
		want.Route[0].Weight, want.Route[1].Weight = 0, 100
		protoDiff(t, "A/B route "+tt.name, cur.Spec.Http[tt.at], want)
	}
	mustWeights(t, r, canary, providers.CanaryWeight(0))
	if err := r.Reconcile(ctx, canary); err != nil {
		t.Fatal(err)
	}
	if err := r.SetABRoutes(ctx, canary, true); err != nil {
		t.Fatal(err)
	}
	if getVS(t, ns, "user-service").ResourceVersion != cur.ResourceVersion {
		t.Error("Reconcile or SetABRoutes wrote an unchanged VirtualService")
	}

	// Someone edits an A/B route: Reconcile puts it back.
	edit(t, ns, "user-service", func(vs *istionetv1.VirtualService) {
		vs.Spec.Http[2].Match[0].Headers["x-canary"] = &networkingv1.StringMatch{MatchType: &networkingv1.StringMatch_Exact{Exact: "everyone"}}
	})
	if err := r.Reconcile(ctx, canary); err != nil {
		t.Fatal(err)
	}
	protoDiff(t, "VirtualService after Reconcile of an edited A/B route", &getVS(t, ns, "user-service").Spec, &cur.Spec)

	if err := r.SetABRoutes(ctx, canary, false); err != nil {
		t.Fatal(err)
	}
	protoDiff(t, "VirtualService after SetABRoutes(off)", &getVS(t, ns, "user-service").Spec, &split.Spec)

	if err := r.SetABRoutes(ctx, canary, true); err != nil {
		t.Fatal(err)
	}
	if err := r.Finalize(ctx, canary); err != nil {
		t.Fatal(err)
	}
	protoDiff(t, "spec after Finalize", &getVS(t, ns, "user-service").Spec, &orig.Spec)
	if raw := rawVirtualService(t, ns, "user-service"); !reflect.DeepEqual(raw, origRaw) {
		t.Errorf("VirtualService after Finalize, as served:\n%v\nwant\n%v", raw, origRaw)
	}
}

// TestABReferenceRewrite: a route rewriting its URI prefix keeps its URI match in its A/B route;
// an A/B match narrowing it is refused without a write.
func TestABReferenceRewrite(t *testing.T) {
	testenv.Require(t, env)
	ctx := t.Context()
	ns := env.Namespace(t)
	vs := &istionetv1.VirtualService{}
	fromYAML(t, `
metadata: {name: api}
spec:
  hosts: [user-service]
  http:
  - match: [{uri: {prefix: /api}}]
    rewrite: {uri: /}
    route: [{destination: {host: user-service}}]
`, ns, vs)
	if err := env.Client.Create(ctx, vs); err != nil {
		t.Fatal(err)
	}
	narrowing := newCanary(t, ns, func(c *sluicev1.Canary) {
		referenceVS("api")(c)
		abTest(sluicev1.HTTPMatchRequest{URI: &sluicev1.StringMatch{Prefix: ptr.To("/api/v2")}})(c)
	})
	r := New(env.Client)
	if err := r.SetABRoutes(ctx, narrowing, true); !errors.Is(err, ErrInvalidSpec) || !strings.Contains(err.Error(), "rewrite") {
		t.Fatalf("SetABRoutes = %v, want ErrInvalidSpec about the rewrite", err)
	}
	if getVS(t, ns, "api").ResourceVersion != vs.ResourceVersion {
		t.Fatal("the VirtualService was written")
	}

	byHeader := &sluicev1.Canary{}
	byHeader.Name, byHeader.Namespace, byHeader.Spec = "by-header", ns, *narrowing.Spec.DeepCopy()
	byHeader.Spec.Analysis.Match = []sluicev1.HTTPMatchRequest{insiderMatch}
	if err := r.SetABRoutes(ctx, byHeader, true); err != nil {
		t.Fatal(err)
	}
	cur := getVS(t, ns, "api")
	if len(cur.Spec.Http) != 2 || cur.Spec.Http[0].GetRewrite().GetUri() != "/" ||
		cur.Spec.Http[0].Match[0].GetUri().GetPrefix() != "/api" || cur.Spec.Http[0].Match[0].Headers["x-canary"].GetExact() != "insider" {
		t.Fatalf("A/B route of a rewriting route: %v", cur.Spec.Http)
	}
}
