package istio

import (
	"errors"
	"maps"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	istionetv1 "istio.io/client-go/pkg/apis/networking/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/providers"
	"sluice.dev/sluice/test/providertest"
	"sluice.dev/sluice/test/testenv"
)

// TestReferenceRollout walks a plan over the seed's VirtualService: at every step the weights sum
// to 100 and nothing but the managed destinations changes; the seed's DestinationRule is never
// written.
func TestReferenceRollout(t *testing.T) {
	testenv.Require(t, env)
	ctx := t.Context()
	ns := env.Namespace(t)
	orig, dr := createSeed(t, ns)
	canary := newCanary(t, ns, referenceVS("user-service"))
	r := New(env.Client)

	if err := r.Reconcile(ctx, canary); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	mustWeights(t, r, canary, providers.CanaryWeight(0)) // the apex selects the primary pods
	if rv := getVS(t, ns, "user-service").ResourceVersion; rv != orig.ResourceVersion {
		t.Fatal("Reconcile or GetRoutes wrote the VirtualService")
	}

	for _, c := range []int32{10, 20, 30, 40, 50, 0} {
		w := providers.CanaryWeight(c)
		if err := r.SetRoutes(ctx, canary, w); err != nil {
			t.Fatalf("SetRoutes(%d): %v", c, err)
		}
		mustWeights(t, r, canary, w)
		cur := getVS(t, ns, "user-service")
		assertOnlyWeightsChanged(t, orig, cur, w)

		if err := r.SetRoutes(ctx, canary, w); err != nil {
			t.Fatalf("SetRoutes(%d) again: %v", c, err)
		}
		if again := getVS(t, ns, "user-service"); again.ResourceVersion != cur.ResourceVersion {
			t.Errorf("SetRoutes(%d) at the current weights wrote the VirtualService", c)
		}
		curDR := getDR(t, ns, "user-service")
		protoDiff(t, "DestinationRule spec", &curDR.Spec, &dr.Spec)
		if curDR.ResourceVersion != dr.ResourceVersion {
			t.Error("the DestinationRule was written")
		}
	}
	if err := r.SetRoutes(ctx, canary, providers.Weights{Primary: 60, Canary: 50}); err == nil {
		t.Error("SetRoutes(60/50) succeeded, want a validation error")
	}
}

// TestReferenceOutsideEdit: weights edited by someone else are seen by GetRoutes and put back by
// SetRoutes, and the owner re-applying their manifest mid-run reads as 100/0 and is re-split.
func TestReferenceOutsideEdit(t *testing.T) {
	testenv.Require(t, env)
	ctx := t.Context()
	ns := env.Namespace(t)
	orig, _ := createSeed(t, ns)
	canary := newCanary(t, ns, referenceVS("user-service"))
	r := New(env.Client)
	want := providers.CanaryWeight(30)
	if err := r.SetRoutes(ctx, canary, want); err != nil {
		t.Fatal(err)
	}

	restore := func(what string) {
		t.Helper()
		if err := r.SetRoutes(ctx, canary, want); err != nil {
			t.Fatalf("SetRoutes after %s: %v", what, err)
		}
		if err := providertest.VerifyWeight(ctx, r, canary, want); err != nil {
			t.Fatalf("after restoring %s: %v", what, err)
		}
		assertOnlyWeightsChanged(t, orig, getVS(t, ns, "user-service"), want)
	}

	edit(t, ns, "user-service", func(vs *istionetv1.VirtualService) {
		for _, h := range vs.Spec.Http {
			h.Route[0].Weight, h.Route[1].Weight = 80, 20
		}
	})
	mustWeights(t, r, canary, providers.CanaryWeight(20))
	if err := providertest.VerifyWeight(ctx, r, canary, want); !errors.Is(err, providers.ErrWeightDrift) {
		t.Fatalf("VerifyWeight after an edit to 80/20 = %v, want ErrWeightDrift", err)
	}
	restore("an edit of every route")

	edit(t, ns, "user-service", func(vs *istionetv1.VirtualService) {
		vs.Spec.Http[1].Route[0].Weight, vs.Spec.Http[1].Route[1].Weight = 0, 100
	})
	if _, err := r.GetRoutes(ctx, canary); !errors.Is(err, providers.ErrWeightDrift) {
		t.Fatalf("GetRoutes with disagreeing routes = %v, want ErrWeightDrift", err)
	}
	restore("an edit of one route")

	edit(t, ns, "user-service", func(vs *istionetv1.VirtualService) {
		vs.Spec.Http[1].Route[0].Weight, vs.Spec.Http[1].Route[1].Weight = 50, 40
	})
	if _, err := r.GetRoutes(ctx, canary); !errors.Is(err, providers.ErrWeightDrift) {
		t.Fatalf("GetRoutes with weights summing to 90 = %v, want ErrWeightDrift", err)
	}
	restore("an edit to a sum of 90")

	edit(t, ns, "user-service", func(vs *istionetv1.VirtualService) { vs.Spec.Http = orig.Spec.Http })
	mustWeights(t, r, canary, providers.CanaryWeight(0))
	restore("the owner re-applying the manifest")

	if err := r.Finalize(ctx, canary); err != nil {
		t.Fatal(err)
	}
	protoDiff(t, "spec after Finalize", &getVS(t, ns, "user-service").Spec, &orig.Spec)
}

// TestReferenceFinalize: Finalize puts the VirtualService back as its owner wrote it.
func TestReferenceFinalize(t *testing.T) {
	testenv.Require(t, env)
	ctx := t.Context()
	ns := env.Namespace(t)
	orig, _ := createSeed(t, ns)
	origRaw := rawVirtualService(t, ns, "user-service")
	canary := newCanary(t, ns, referenceVS("user-service"))
	r := New(env.Client)

	for _, c := range []int32{10, 50} {
		if err := r.SetRoutes(ctx, canary, providers.CanaryWeight(c)); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Finalize(ctx, canary); err != nil {
		t.Fatalf("Finalize: %v", err)
	}
	cur := getVS(t, ns, "user-service")
	protoDiff(t, "spec after Finalize", &cur.Spec, &orig.Spec)
	if !maps.Equal(cur.Labels, orig.Labels) || !maps.Equal(cur.Annotations, orig.Annotations) {
		t.Errorf("metadata after Finalize: labels %v annotations %v, want %v %v",
			cur.Labels, cur.Annotations, orig.Labels, orig.Annotations)
	}
	if raw := rawVirtualService(t, ns, "user-service"); !reflect.DeepEqual(raw, origRaw) {
		t.Errorf("VirtualService after Finalize, as served:\n%v\nwant\n%v", raw, origRaw)
	}

	if err := r.Finalize(ctx, canary); err != nil {
		t.Fatalf("second Finalize: %v", err)
	}
	if again := getVS(t, ns, "user-service"); again.ResourceVersion != cur.ResourceVersion {
		t.Error("a second Finalize wrote the VirtualService")
	}

	// A Canary whose VirtualService is gone finalizes cleanly.
	if err := env.Client.Delete(ctx, cur); err != nil {
		t.Fatal(err)
	}
	if err := r.Finalize(ctx, canary); err != nil {
		t.Fatalf("Finalize without a VirtualService: %v", err)
	}
}

// TestReferenceDelegate: a delegate VirtualService (no hosts) with an FQDN destination and port;
// its fault injection, mirror and other route stay, Finalize restores it.
func TestReferenceDelegate(t *testing.T) {
	testenv.Require(t, env)
	ctx := t.Context()
	ns := env.Namespace(t)
	orig := &istionetv1.VirtualService{}
	fromYAML(t, strings.ReplaceAll(`
metadata: {name: users-delegate}
spec:
  http:
  - name: api
    match: [{uri: {prefix: /api}}]
    route:
    - destination: {host: user-service.NS.svc.cluster.local, port: {number: 8080}}
    fault: {delay: {percentage: {value: 5}, fixedDelay: 1s}}
    mirror: {host: shadow}
    corsPolicy: {allowOrigins: [{exact: "https://example.com"}], maxAge: 24h}
  - name: static
    route: [{destination: {host: static}}]
`, "NS", ns), ns, orig)
	if err := env.Client.Create(ctx, orig); err != nil {
		t.Fatal(err)
	}
	canary := newCanary(t, ns, referenceVS("users-delegate"))
	r := New(env.Client)
	if err := r.Reconcile(ctx, canary); err != nil {
		t.Fatal(err)
	}
	if err := r.SetRoutes(ctx, canary, providers.CanaryWeight(20)); err != nil {
		t.Fatal(err)
	}
	mustWeights(t, r, canary, providers.CanaryWeight(20))
	cur := getVS(t, ns, "users-delegate")
	fqdn := "." + ns + ".svc.cluster.local"
	want := orig.Spec.Http[0].Route[0].Destination
	for i, host := range []string{"user-service-primary" + fqdn, "user-service-canary" + fqdn} {
		d := cur.Spec.Http[0].Route[i]
		if d.Destination.Host != host || d.Destination.GetPort().GetNumber() != want.GetPort().GetNumber() {
			t.Errorf("destination %d = %v, want host %s port 8080", i, d.Destination, host)
		}
	}
	a, b := proto.CloneOf(orig.Spec.Http[0]), proto.CloneOf(cur.Spec.Http[0])
	a.Route, b.Route = nil, nil
	protoDiff(t, "delegate route outside its destinations", b, a)
	protoDiff(t, "other route", cur.Spec.Http[1], orig.Spec.Http[1])

	if err := r.Finalize(ctx, canary); err != nil {
		t.Fatal(err)
	}
	protoDiff(t, "delegate spec after Finalize", &getVS(t, ns, "users-delegate").Spec, &orig.Spec)
}

// TestReferenceErrors: missing and unusable VirtualServices and routeRefs.
func TestReferenceErrors(t *testing.T) {
	testenv.Require(t, env)
	ctx := t.Context()
	ns := env.Namespace(t)
	r := New(env.Client)

	missing := newCanary(t, ns, referenceVS("nope"))
	if err := r.Reconcile(ctx, missing); !errors.Is(err, providers.ErrRouteNotFound) {
		t.Errorf("Reconcile = %v, want ErrRouteNotFound", err)
	}
	if err := r.SetRoutes(ctx, missing, providers.CanaryWeight(10)); !errors.Is(err, providers.ErrRouteNotFound) {
		t.Errorf("SetRoutes = %v, want ErrRouteNotFound", err)
	}
	if _, err := r.GetRoutes(ctx, missing); !errors.Is(err, providers.ErrRouteNotFound) {
		t.Errorf("GetRoutes = %v, want ErrRouteNotFound", err)
	}
	if err := r.Finalize(ctx, missing); err != nil {
		t.Errorf("Finalize = %v, want nil", err)
	}

	other := &istionetv1.VirtualService{}
	fromYAML(t, `
metadata: {name: other}
spec:
  hosts: [other]
  http: [{route: [{destination: {host: other}}]}]
`, ns, other)
	mixed := &istionetv1.VirtualService{}
	fromYAML(t, `
metadata: {name: mixed}
spec:
  hosts: [user-service]
  http: [{route: [{destination: {host: user-service}, weight: 80}, {destination: {host: legacy}, weight: 20}]}]
`, ns, mixed)
	for _, obj := range []client.Object{other, mixed} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		mutate func(*sluicev1.Canary)
		want   error
	}{
		{referenceVS("other"), ErrNoApexRoute},
		{referenceVS("mixed"), ErrUnsupportedRoute},
		{func(c *sluicev1.Canary) {
			c.Spec.Service.RouteRef = &sluicev1.RouteReference{Kind: "HTTPRoute", Name: "other"}
		}, ErrInvalidSpec},
	} {
		c := &sluicev1.Canary{}
		c.Namespace, c.Spec.TargetRef.Name = ns, "user-service"
		tc.mutate(c)
		if err := r.Reconcile(ctx, c); !errors.Is(err, tc.want) {
			t.Errorf("Reconcile with routeRef %+v = %v, want %v", c.Spec.Service.RouteRef, err, tc.want)
		}
		if err := r.SetRoutes(ctx, c, providers.CanaryWeight(10)); !errors.Is(err, tc.want) {
			t.Errorf("SetRoutes with routeRef %+v = %v, want %v", c.Spec.Service.RouteRef, err, tc.want)
		}
	}
	if rv := getVS(t, ns, "mixed").ResourceVersion; rv != mixed.ResourceVersion {
		t.Error("an unsupported VirtualService was written")
	}
}
