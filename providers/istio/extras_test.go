package istio

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/providers"
	"sluice.dev/sluice/test/testenv"
)

// twoRouteVirtualService routes /static to another service and everything else to the apex.
const twoRouteVirtualService = `
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata:
  name: shop
spec:
  hosts: [shop.example.com]
  gateways: [istio-system/public]
  http:
    - name: static
      match: [{uri: {prefix: /static}}]
      route: [{destination: {host: static-files, port: {number: 80}}}]
    - name: app
      timeout: 10s
      route:
        - destination: {host: user-service, port: {number: 8080}}
          headers: {response: {set: {x-served-by: shop}}}
`

func createTwoRouteVS(t *testing.T, ns string) {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(twoRouteVirtualService), &u.Object); err != nil {
		t.Fatal(err)
	}
	u.SetNamespace(ns)
	if err := env.Client.Create(t.Context(), u, client.FieldOwner("kubectl")); err != nil {
		t.Fatal(err)
	}
}

// TestExtrasReference turns mirroring, then session affinity, on and off on the user's
// VirtualService: only the managed route changes (the static route stays identical), turning
// either off gives back the routes exactly, and Finalize the user's original.
func TestExtrasReference(t *testing.T) {
	testenv.Require(t, env)
	ctx := t.Context()
	ns := env.Namespace(t)
	createTwoRouteVS(t, ns)
	orig := getVS(t, ns, "shop")
	canary := newCanary(t, ns, referenceVS("shop"))
	r := New(env.Client)
	if err := r.SetRoutes(ctx, canary, providers.CanaryWeight(0)); err != nil {
		t.Fatal(err)
	}
	before := getVS(t, ns, "shop")

	if err := r.SetMirror(ctx, canary, 40); err != nil {
		t.Fatal(err)
	}
	http := getVS(t, ns, "shop").Spec.GetHttp()
	protoDiff(t, "static route", http[0], before.Spec.GetHttp()[0])
	if m := http[1].GetMirror(); m.GetHost() != "user-service-canary" || m.GetPort().GetNumber() != 8080 || http[1].GetMirrorPercentage().GetValue() != 40 {
		t.Fatalf("managed route mirror %v %v, want user-service-canary:8080 at 40%%", m, http[1].GetMirrorPercentage())
	}
	if got, err := r.GetMirror(ctx, canary); err != nil || got != 40 {
		t.Fatalf("GetMirror = %d, %v", got, err)
	}
	mustWeights(t, r, canary, providers.CanaryWeight(0))
	if err := r.SetRoutes(ctx, canary, providers.CanaryWeight(0)); err != nil {
		t.Fatal(err)
	}
	if got, _ := r.GetMirror(ctx, canary); got != 40 {
		t.Fatal("SetRoutes dropped the mirror")
	}
	if err := r.SetMirror(ctx, canary, 0); err != nil {
		t.Fatal(err)
	}
	for i, rt := range getVS(t, ns, "shop").Spec.GetHttp() {
		protoDiff(t, "route after mirror off", rt, before.Spec.GetHttp()[i])
	}

	if err := r.SetRoutes(ctx, canary, providers.CanaryWeight(20)); err != nil {
		t.Fatal(err)
	}
	weighted := getVS(t, ns, "shop")
	cookie := providers.AffinityCookie("sluice-canary", "rev2")
	if err := r.SetSessionAffinity(ctx, canary, cookie); err != nil {
		t.Fatal(err)
	}
	http = getVS(t, ns, "shop").Spec.GetHttp()
	if len(http) != 3 || http[1].GetName() != "sluice-affinity-1" || http[2].GetName() != "app" {
		t.Fatalf("routes %v, want static, the cookie route, app", http)
	}
	protoDiff(t, "static route", http[0], weighted.Spec.GetHttp()[0])
	aff := http[1]
	if re := aff.GetMatch()[0].GetHeaders()["cookie"].GetRegex(); re == "" || aff.GetRoute()[0].GetWeight() != 0 || aff.GetRoute()[1].GetWeight() != 100 {
		t.Fatalf("cookie route %v", aff)
	}
	for _, rt := range http[1:] {
		dests := rt.GetRoute()
		if got := dests[1].GetHeaders().GetResponse().GetAdd()["set-cookie"]; got != cookie+"; Max-Age=86400; Path=/" {
			t.Errorf("%s: canary destination sets %q", rt.GetName(), got)
		}
		if dests[1].GetHeaders().GetResponse().GetSet()["x-served-by"] != "shop" {
			t.Errorf("%s: the user's response header was lost", rt.GetName())
		}
		if _, ok := dests[0].GetHeaders().GetResponse().GetAdd()["set-cookie"]; ok {
			t.Errorf("%s: the primary hands out the cookie", rt.GetName())
		}
	}
	mustWeights(t, r, canary, providers.CanaryWeight(20))
	if got, err := r.GetSessionAffinity(ctx, canary); err != nil || got != cookie {
		t.Fatalf("GetSessionAffinity = %q, %v", got, err)
	}
	if on, _ := r.GetABRoutes(ctx, canary); on {
		t.Fatal("a cookie route reads as an A/B route")
	}
	if err := r.SetSessionAffinity(ctx, canary, ""); err != nil {
		t.Fatal(err)
	}
	after := getVS(t, ns, "shop").Spec.GetHttp()
	if len(after) != 2 {
		t.Fatalf("%d routes after affinity off", len(after))
	}
	for i, rt := range after {
		protoDiff(t, "route after affinity off", rt, weighted.Spec.GetHttp()[i])
	}
	if err := r.SetSessionAffinity(ctx, canary, cookie); err != nil {
		t.Fatal(err)
	}
	if err := r.Finalize(ctx, canary); err != nil {
		t.Fatal(err)
	}
	if got := getVS(t, ns, "shop"); !proto.Equal(&got.Spec, &orig.Spec) {
		t.Fatalf("Finalize did not restore the user's VirtualService:\ngot  %v\nwant %v", &got.Spec, &orig.Spec)
	}
}

// TestExtrasGenerated: the generated VirtualService keeps its extras through Reconcile and
// SetRoutes, and a second mirror on a route that mirrors elsewhere is refused.
func TestExtrasGenerated(t *testing.T) {
	testenv.Require(t, env)
	ctx := t.Context()
	ns := env.Namespace(t)
	canary := newCanary(t, ns, func(c *sluicev1.Canary) {
		c.Spec.Analysis.SessionAffinity = &sluicev1.SessionAffinity{CookieName: "c", MaxAge: 120}
	})
	r := New(env.Client)
	if err := r.Reconcile(ctx, canary); err != nil {
		t.Fatal(err)
	}
	if err := r.SetRoutes(ctx, canary, providers.CanaryWeight(10)); err != nil {
		t.Fatal(err)
	}
	if err := r.SetSessionAffinity(ctx, canary, providers.AffinityCookie("c", "r1")); err != nil {
		t.Fatal(err)
	}
	vs := getVS(t, ns, "user-service")
	if len(vs.Spec.GetHttp()) != 2 || vs.Spec.GetHttp()[1].GetRoute()[1].GetHeaders().GetResponse().GetAdd()["set-cookie"] != "c=sluice-r1; Max-Age=120; Path=/" {
		t.Fatalf("generated VirtualService with affinity: %v", vs.Spec.GetHttp())
	}
	if err := r.Reconcile(ctx, canary); err != nil {
		t.Fatal(err)
	}
	if again := getVS(t, ns, "user-service"); again.ResourceVersion != vs.ResourceVersion {
		t.Fatal("Reconcile rewrote the VirtualService with affinity on")
	}
	if err := r.SetRoutes(ctx, canary, providers.CanaryWeight(0)); err != nil {
		t.Fatal(err)
	}
	if err := r.SetSessionAffinity(ctx, canary, ""); err != nil {
		t.Fatal(err)
	}
	if http := getVS(t, ns, "user-service").Spec.GetHttp(); len(http) != 1 || http[0].GetRoute()[1].GetHeaders() != nil {
		t.Fatalf("after affinity off: %v", http)
	}
}
