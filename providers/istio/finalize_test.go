package istio

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	networkingv1 "istio.io/api/networking/v1"

	"sluice.dev/sluice/providers"
	"sluice.dev/sluice/test/testenv"
)

// TestReferenceFinalizeKeepsUserEdits edits the seed's VirtualService in the middle of a run, as
// its owner would: the timeout of a route Sluice manages the destinations of, and a new route to
// another service. Finalize undoes only what Sluice changed: both managed routes get their
// destinations back as written (subsets and 90/10 weights included), the new timeout and the new
// route stay.
func TestReferenceFinalizeKeepsUserEdits(t *testing.T) {
	testenv.Require(t, env)
	ctx := t.Context()
	ns := env.Namespace(t)
	orig, _ := createSeed(t, ns)
	canary := newCanary(t, ns, referenceVS("user-service"))
	r := New(env.Client)
	if err := r.SetRoutes(ctx, canary, providers.CanaryWeight(30)); err != nil {
		t.Fatal(err)
	}
	vs := getVS(t, ns, "user-service")
	vs.Spec.Http[1].Timeout = durationpb.New(20e9)
	added := &networkingv1.HTTPRoute{
		Match: []*networkingv1.HTTPMatchRequest{{Uri: &networkingv1.StringMatch{MatchType: &networkingv1.StringMatch_Prefix{Prefix: "/legacy"}}}},
		Route: []*networkingv1.HTTPRouteDestination{{Destination: &networkingv1.Destination{Host: "legacy"}}},
	}
	vs.Spec.Http = append(vs.Spec.Http, added)
	if err := env.Client.Update(ctx, vs); err != nil {
		t.Fatal(err)
	}

	if err := r.Finalize(ctx, canary); err != nil {
		t.Fatalf("Finalize: %v", err)
	}
	want := proto.CloneOf(&orig.Spec)
	want.Http[1].Timeout = durationpb.New(20e9)
	want.Http = append(want.Http, added)
	cur := getVS(t, ns, "user-service")
	protoDiff(t, "spec after Finalize (the user's edits kept, Sluice's undone)", &cur.Spec, want)
}
