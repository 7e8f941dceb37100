package istio

import (
	"errors"
	"slices"
	"testing"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/providers"
	"sluice.dev/sluice/test/testenv"
)

// PinReach keeps what the generated VirtualService reaches: a write through the pinned copy of a
// Canary whose spec now names another namespace's host and gateway moves only the weights, and
// the VirtualService's hosts and gateways stay as they were. Without a VirtualService there is
// nothing to pin.
func TestPinReachGenerated(t *testing.T) {
	testenv.Require(t, env)
	ctx := t.Context()
	ns := env.Namespace(t)
	canary := newCanary(t, ns, func(c *sluicev1.Canary) {
		c.Spec.Service.Hosts = []string{"user-service." + c.Namespace + ".svc.cluster.local"}
		c.Spec.Service.Gateways = []string{"mesh", "public"}
	})
	r := New(env.Client)
	if _, err := r.PinReach(ctx, canary); !errors.Is(err, providers.ErrRouteNotFound) {
		t.Fatalf("PinReach before the VirtualService exists = %v, want ErrRouteNotFound", err)
	}
	if err := r.Reconcile(ctx, canary); err != nil {
		t.Fatal(err)
	}
	before := getVS(t, ns, "user-service")

	edited := canary.DeepCopy()
	edited.Spec.Service.Hosts = []string{"payments.tenant-b.svc.cluster.local"}
	edited.Spec.Service.Gateways = []string{"istio-system/ingress"}
	pinned, err := r.PinReach(ctx, edited)
	if err != nil {
		t.Fatal(err)
	}
	if edited.Spec.Service.Gateways[0] != "istio-system/ingress" {
		t.Fatal("PinReach modified the Canary it was given")
	}
	if err := r.SetRoutes(ctx, pinned, providers.CanaryWeight(0)); err != nil {
		t.Fatal(err)
	}
	if got := getVS(t, ns, "user-service"); got.ResourceVersion != before.ResourceVersion {
		t.Errorf("SetRoutes through the pinned Canary at the current weights wrote the VirtualService: %v", got.Spec.GetHosts())
	}
	if err := r.SetRoutes(ctx, pinned, providers.CanaryWeight(40)); err != nil {
		t.Fatal(err)
	}
	after := getVS(t, ns, "user-service")
	if !slices.Equal(after.Spec.GetHosts(), before.Spec.GetHosts()) || !slices.Equal(after.Spec.GetGateways(), before.Spec.GetGateways()) {
		t.Errorf("hosts %v gateways %v after a pinned write, want %v %v", after.Spec.GetHosts(), after.Spec.GetGateways(),
			before.Spec.GetHosts(), before.Spec.GetGateways())
	}
	mustWeights(t, r, canary, providers.CanaryWeight(40))

	ref := edited.DeepCopy()
	ref.Spec.Service.RouteRef = &sluicev1.RouteReference{Kind: "VirtualService", Name: "user-vs"}
	if got, err := r.PinReach(ctx, ref); err != nil || got != ref {
		t.Errorf("PinReach with a routeRef = %p, %v; want the Canary itself", got, err)
	}
}
