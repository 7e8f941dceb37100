package gatewayapi_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/providers"
)

// PinReach keeps what the generated HTTPRoute reaches: a write through the pinned copy of a
// Canary whose spec now names another namespace's parent and hostname moves only the weights,
// and the route's parentRefs and hostnames stay as they were. Without a route there is nothing to
// pin (creating one would publish the new reach).
func TestPinReachGenerated(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	ns := env.Namespace(t)
	canary := newCanary(t, ns, func(s *sluicev1.CanaryService) {
		s.GatewayRefs = []gwv1.ParentReference{{Name: "gw", SectionName: ptr.To(gwv1.SectionName("http"))}}
		s.Hosts = []string{"app.example.com"}
	})
	if _, err := h.PinReach(ctx, canary); !errors.Is(err, providers.ErrRouteNotFound) {
		t.Fatalf("PinReach before the route exists = %v, want ErrRouteNotFound", err)
	}
	if err := h.Reconcile(ctx, canary); err != nil {
		t.Fatal(err)
	}
	before := getRoute(t, ns, "podinfo")

	edited := canary.DeepCopy()
	edited.Spec.Service.GatewayRefs = []gwv1.ParentReference{{Name: "ingress", Namespace: ptr.To(gwv1.Namespace("infra"))}}
	edited.Spec.Service.Hosts = []string{"payments.tenant-b.svc.cluster.local"}
	pinned, err := h.PinReach(ctx, edited)
	if err != nil {
		t.Fatal(err)
	}
	if edited.Spec.Service.Hosts[0] != "payments.tenant-b.svc.cluster.local" {
		t.Fatal("PinReach modified the Canary it was given")
	}
	if err := h.SetRoutes(ctx, pinned, providers.CanaryWeight(0)); err != nil {
		t.Fatal(err)
	}
	if got := getRoute(t, ns, "podinfo"); got.ResourceVersion != before.ResourceVersion {
		t.Errorf("SetRoutes through the pinned Canary at the current weights wrote the route: %+v", got.Spec)
	}
	if err := h.SetRoutes(ctx, pinned, providers.CanaryWeight(30)); err != nil {
		t.Fatal(err)
	}
	after := getRoute(t, ns, "podinfo")
	if !reflect.DeepEqual(after.Spec.ParentRefs, before.Spec.ParentRefs) || !reflect.DeepEqual(after.Spec.Hostnames, before.Spec.Hostnames) {
		t.Errorf("parents %+v hostnames %v after a pinned write, want %+v %v", after.Spec.ParentRefs, after.Spec.Hostnames,
			before.Spec.ParentRefs, before.Spec.Hostnames)
	}
	if w, err := h.GetRoutes(ctx, canary); err != nil || w != providers.CanaryWeight(30) {
		t.Errorf("weights after the pinned write = %+v, %v; want 70/30", w, err)
	}

	ref := edited.DeepCopy()
	ref.Spec.Service.RouteRef = &sluicev1.RouteReference{Kind: "HTTPRoute", Name: "user-route"}
	if got, err := h.PinReach(ctx, ref); err != nil || got != ref {
		t.Errorf("PinReach with a routeRef = %p, %v; want the Canary itself", got, err)
	}
}
