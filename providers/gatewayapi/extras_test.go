package gatewayapi_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/providers"
)

// setCookieOf returns the Set-Cookie header a backendRef's response filter adds ("" for none).
func setCookieOf(ref gwv1.HTTPBackendRef) string {
	for _, f := range ref.Filters {
		if f.ResponseHeaderModifier == nil {
			continue
		}
		for _, h := range f.ResponseHeaderModifier.Add {
			if strings.EqualFold(string(h.Name), "Set-Cookie") {
				return h.Value
			}
		}
	}
	return ""
}

// TestSessionAffinityReference turns session affinity on and off on the user's three-rule route:
// the managed rules A and C get a cookie rule before them and hand out the cookie from their
// canary backend; rule B stays byte-identical; turning it off gives back the rules exactly, and
// Finalize the user's original.
func TestSessionAffinityReference(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	ns := env.Namespace(t)
	orig := newThreeRuleRoute(t, ns)
	canary := referenceCanary(t, ns, "shop")
	if err := h.SetRoutes(ctx, canary, providers.CanaryWeight(30)); err != nil {
		t.Fatal(err)
	}
	before := getRoute(t, ns, "shop")
	cookie := providers.AffinityCookie("sluice-canary", "5d8f9c7b6")
	if err := h.SetSessionAffinity(ctx, canary, cookie); err != nil {
		t.Fatal(err)
	}
	route := getRoute(t, ns, "shop")
	var names []string
	for _, r := range route.Spec.Rules {
		names = append(names, string(ptr.Deref(r.Name, "")))
	}
	if want := []string{"sluice-affinity-0", "", "static", "sluice-affinity-2", ""}; !reflect.DeepEqual(names, want) {
		t.Fatalf("rule names %q, want %q", names, want)
	}
	if !reflect.DeepEqual(route.Spec.Rules[2], before.Spec.Rules[ruleB]) {
		t.Fatalf("rule B changed:\n got %+v\nwant %+v", route.Spec.Rules[2], before.Spec.Rules[ruleB])
	}
	wantSetCookie := cookie + "; Max-Age=86400; Path=/"
	for _, i := range []int{0, 1, 3, 4} {
		r := route.Spec.Rules[i]
		if got := setCookieOf(r.BackendRefs[1]); got != wantSetCookie {
			t.Errorf("rule %d: canary backendRef sets cookie %q, want %q", i, got, wantSetCookie)
		}
		if got := setCookieOf(r.BackendRefs[0]); got != "" {
			t.Errorf("rule %d: the primary hands out the cookie %q", i, got)
		}
	}
	for _, i := range []int{0, 3} {
		r := route.Spec.Rules[i]
		if w := []int32{*r.BackendRefs[0].Weight, *r.BackendRefs[1].Weight}; w[0] != 0 || w[1] == 0 {
			t.Errorf("cookie rule %d weights %v, want everything on the canary", i, w)
		}
		m := r.Matches[0]
		if len(m.Headers) == 0 || m.Headers[len(m.Headers)-1].Name != "Cookie" || !strings.Contains(m.Headers[len(m.Headers)-1].Value, "sluice-canary=sluice-5d8f9c7b6") {
			t.Errorf("cookie rule %d matches %+v, want the cookie header", i, r.Matches)
		}
	}
	if p := route.Spec.Rules[0].Matches[0].Path; *p.Value != "/api" {
		t.Errorf("cookie rule of A matches path %q, want A's /api (A rewrites its prefix)", *p.Value)
	}
	if w, err := h.GetRoutes(ctx, canary); err != nil || w != providers.CanaryWeight(30) {
		t.Fatalf("GetRoutes with cookie rules = %+v, %v; want 70/30", w, err)
	}
	if got, err := h.GetSessionAffinity(ctx, canary); err != nil || got != cookie {
		t.Fatalf("GetSessionAffinity = %q, %v", got, err)
	}
	h.noWrites(t, "SetSessionAffinity again", func() error { return h.SetSessionAffinity(ctx, canary, cookie) })
	if err := h.SetRoutes(ctx, canary, providers.CanaryWeight(40)); err != nil {
		t.Fatal(err)
	}
	if got, _ := h.GetSessionAffinity(ctx, canary); got != cookie || len(getRoute(t, ns, "shop").Spec.Rules) != 5 {
		t.Fatal("SetRoutes dropped the session affinity")
	}
	if err := h.SetRoutes(ctx, canary, providers.CanaryWeight(30)); err != nil {
		t.Fatal(err)
	}

	if err := h.SetSessionAffinity(ctx, canary, ""); err != nil {
		t.Fatal(err)
	}
	if after := getRoute(t, ns, "shop"); !reflect.DeepEqual(after.Spec.Rules, before.Spec.Rules) {
		t.Fatalf("rules after affinity off differ from before:\n got %+v\nwant %+v", after.Spec.Rules, before.Spec.Rules)
	}
	if err := h.SetSessionAffinity(ctx, canary, cookie); err != nil {
		t.Fatal(err)
	}
	if err := h.Finalize(ctx, canary); err != nil {
		t.Fatal(err)
	}
	if got := getRoute(t, ns, "shop"); !reflect.DeepEqual(got.Spec.Rules, orig.Spec.Rules) {
		t.Fatalf("Finalize with affinity on did not restore the user's rules:\n got %+v\nwant %+v", got.Spec.Rules, orig.Spec.Rules)
	}
}

// TestMirrorGeneratedAndReference mirrors to the canary on the generated route and on the user's
// route: the managed rules get the RequestMirror filter, every other rule stays byte-identical,
// and turning it off gives back the rules exactly.
func TestMirrorGeneratedAndReference(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	ns := env.Namespace(t)

	gen := newCanary(t, ns, nil)
	if err := h.Reconcile(ctx, gen); err != nil {
		t.Fatal(err)
	}
	beforeGen := getRoute(t, ns, "podinfo")
	if err := h.SetMirror(ctx, gen, 50); err != nil {
		t.Fatal(err)
	}
	rule := getRoute(t, ns, "podinfo").Spec.Rules[0]
	want := gwv1.HTTPRouteFilter{Type: gwv1.HTTPRouteFilterRequestMirror, RequestMirror: &gwv1.HTTPRequestMirrorFilter{
		BackendRef: gwv1.BackendObjectReference{Group: ptr.To(gwv1.Group("")), Kind: ptr.To(gwv1.Kind("Service")),
			Name: "podinfo-canary", Port: ptr.To(gwv1.PortNumber(9898))},
		Percent: ptr.To(int32(50)),
	}}
	if len(rule.Filters) != 1 || !reflect.DeepEqual(rule.Filters[0], want) {
		t.Fatalf("generated rule filters %+v, want the mirror to the canary", rule.Filters)
	}
	if m, err := h.GetMirror(ctx, gen); err != nil || m != 50 {
		t.Fatalf("GetMirror = %d, %v", m, err)
	}
	if w, err := h.GetRoutes(ctx, gen); err != nil || w != providers.CanaryWeight(0) {
		t.Fatalf("GetRoutes while mirroring = %+v, %v", w, err)
	}
	h.noWrites(t, "Reconcile while mirroring", func() error { return h.Reconcile(ctx, gen) })
	h.noWrites(t, "SetMirror again", func() error { return h.SetMirror(ctx, gen, 50) })
	if err := h.SetMirror(ctx, gen, 0); err != nil {
		t.Fatal(err)
	}
	if got := getRoute(t, ns, "podinfo"); !reflect.DeepEqual(got.Spec.Rules, beforeGen.Spec.Rules) {
		t.Fatalf("generated rules after mirror off:\n got %+v\nwant %+v", got.Spec.Rules, beforeGen.Spec.Rules)
	}

	newThreeRuleRoute(t, ns)
	ref := referenceCanary(t, ns, "shop")
	if err := h.SetRoutes(ctx, ref, providers.CanaryWeight(0)); err != nil {
		t.Fatal(err)
	}
	before := getRoute(t, ns, "shop")
	if err := h.SetMirror(ctx, ref, 100); err != nil {
		t.Fatal(err)
	}
	route := getRoute(t, ns, "shop")
	if !reflect.DeepEqual(route.Spec.Rules[ruleB], before.Spec.Rules[ruleB]) {
		t.Fatal("mirroring changed rule B")
	}
	for _, i := range []int{ruleA, ruleC} {
		got, was := route.Spec.Rules[i], before.Spec.Rules[i]
		if len(got.Filters) != len(was.Filters)+1 || (len(was.Filters) > 0 && !reflect.DeepEqual(got.Filters[:len(was.Filters)], was.Filters)) ||
			got.Filters[len(was.Filters)].RequestMirror == nil || got.Filters[len(was.Filters)].RequestMirror.BackendRef.Name != "podinfo-canary" {
			t.Fatalf("rule %d filters %+v, want the user's followed by the mirror", i, got.Filters)
		}
		if !reflect.DeepEqual(got.BackendRefs, was.BackendRefs) || !reflect.DeepEqual(got.Matches, was.Matches) {
			t.Fatalf("mirroring changed rule %d's backends or matches", i)
		}
	}
	if err := h.SetMirror(ctx, ref, 0); err != nil {
		t.Fatal(err)
	}
	if got := getRoute(t, ns, "shop"); !reflect.DeepEqual(got.Spec.Rules, before.Spec.Rules) {
		t.Fatalf("rules after mirror off:\n got %+v\nwant %+v", got.Spec.Rules, before.Spec.Rules)
	}
}

// TestSessionAffinityGeneratedMaxAge: the cookie's Max-Age comes from the spec.
func TestSessionAffinityGeneratedMaxAge(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	ns := env.Namespace(t)
	canary := newCanary(t, ns, nil)
	canary.Spec.Analysis.SessionAffinity = &sluicev1.SessionAffinity{CookieName: "c", MaxAge: 60}
	if err := h.Reconcile(ctx, canary); err != nil {
		t.Fatal(err)
	}
	if err := h.SetRoutes(ctx, canary, providers.CanaryWeight(10)); err != nil {
		t.Fatal(err)
	}
	if err := h.SetSessionAffinity(ctx, canary, providers.AffinityCookie("c", "r1")); err != nil {
		t.Fatal(err)
	}
	route := getRoute(t, ns, "podinfo")
	if len(route.Spec.Rules) != 2 || setCookieOf(route.Spec.Rules[1].BackendRefs[1]) != "c=sluice-r1; Max-Age=60; Path=/" {
		t.Fatalf("generated route with affinity: %+v", route.Spec.Rules)
	}
	h.noWrites(t, "Reconcile with affinity on", func() error { return h.Reconcile(ctx, canary) })
	if w, err := h.GetRoutes(ctx, canary); err != nil || w != providers.CanaryWeight(10) {
		t.Fatalf("GetRoutes = %+v, %v", w, err)
	}
}
