package istio

import (
	"errors"
	"strings"
	"testing"

	networkingv1 "istio.io/api/networking/v1"
	istionetv1 "istio.io/client-go/pkg/apis/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/providers"
	"sluice.dev/sluice/test/providertest"
	"sluice.dev/sluice/test/testenv"
)

// webCanary makes the Canary deliver web with every generated-route field set (fullService).
func webCanary(c *sluicev1.Canary) {
	c.Name, c.Spec.TargetRef.Name = "web", "web"
	c.Spec.Service = fullService()
}

// TestGenerated: Reconcile creates the VirtualService (100/0) and DestinationRules with every
// field; SetRoutes/GetRoutes round trip; Reconcile keeps the weights and writes nothing when
// nothing changed; an outside edit is put back; Finalize deletes what was generated.
func TestGenerated(t *testing.T) {
	testenv.Require(t, env)
	ctx := t.Context()
	ns := env.Namespace(t)
	canary := newCanary(t, ns, webCanary)
	r := New(env.Client)

	if err := r.SetRoutes(ctx, canary, providers.CanaryWeight(10)); !errors.Is(err, providers.ErrRouteNotFound) {
		t.Fatalf("SetRoutes before Reconcile = %v, want ErrRouteNotFound", err)
	}
	if err := r.Reconcile(ctx, canary); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	vs := getVS(t, ns, "web")
	protoDiff(t, "generated VirtualService", &vs.Spec, wantGenerated(t, 0))
	if !metav1.IsControlledBy(vs, canary) {
		t.Errorf("VirtualService owners %v, want the Canary as controller", vs.OwnerReferences)
	}
	tp, err := convertTrafficPolicy(fullService().TrafficPolicy)
	if err != nil {
		t.Fatal(err)
	}
	drVersions := map[string]string{}
	for _, host := range []string{"web-primary", "web-canary"} {
		dr := getDR(t, ns, host)
		protoDiff(t, "DestinationRule "+host, &dr.Spec, &networkingv1.DestinationRule{Host: host, TrafficPolicy: tp})
		if !metav1.IsControlledBy(dr, canary) {
			t.Errorf("DestinationRule %s owners %v, want the Canary as controller", host, dr.OwnerReferences)
		}
		drVersions[host] = dr.ResourceVersion
	}
	mustWeights(t, r, canary, providers.CanaryWeight(0))

	if err := r.SetRoutes(ctx, canary, providers.CanaryWeight(30)); err != nil {
		t.Fatal(err)
	}
	mustWeights(t, r, canary, providers.CanaryWeight(30))
	vs = getVS(t, ns, "web")
	protoDiff(t, "VirtualService at 30", &vs.Spec, wantGenerated(t, 30))

	// Reconcile never resets the weights and, when nothing changed, writes nothing.
	if err := r.Reconcile(ctx, canary); err != nil {
		t.Fatal(err)
	}
	if err := r.SetRoutes(ctx, canary, providers.CanaryWeight(30)); err != nil {
		t.Fatal(err)
	}
	mustWeights(t, r, canary, providers.CanaryWeight(30))
	if getVS(t, ns, "web").ResourceVersion != vs.ResourceVersion {
		t.Error("Reconcile or SetRoutes wrote an unchanged VirtualService")
	}
	for host, rv := range drVersions {
		if getDR(t, ns, host).ResourceVersion != rv {
			t.Errorf("Reconcile wrote the unchanged DestinationRule %s", host)
		}
	}

	// A spec change is applied at the current weights.
	canary.Spec.Service.Timeout = "20s"
	if err := r.Reconcile(ctx, canary); err != nil {
		t.Fatal(err)
	}
	mustWeights(t, r, canary, providers.CanaryWeight(30))
	if got := getVS(t, ns, "web").Spec.Http[0].GetTimeout().AsDuration().String(); got != "20s" {
		t.Errorf("timeout after a spec change = %s, want 20s", got)
	}
	canary.Spec.Service.Timeout = "10s"
	if err := r.Reconcile(ctx, canary); err != nil {
		t.Fatal(err)
	}

	// An outside edit of the weights is seen and put back.
	edit(t, ns, "web", func(vs *istionetv1.VirtualService) {
		vs.Spec.Http[0].Route[0].Weight, vs.Spec.Http[0].Route[1].Weight = 50, 50
	})
	if err := providertest.VerifyWeight(ctx, r, canary, providers.CanaryWeight(30)); !errors.Is(err, providers.ErrWeightDrift) {
		t.Fatalf("VerifyWeight after an edit = %v, want ErrWeightDrift", err)
	}
	if err := r.SetRoutes(ctx, canary, providers.CanaryWeight(30)); err != nil {
		t.Fatal(err)
	}
	protoDiff(t, "VirtualService restored", &getVS(t, ns, "web").Spec, wantGenerated(t, 30))

	if err := r.Finalize(ctx, canary); err != nil {
		t.Fatalf("Finalize: %v", err)
	}
	for _, key := range []struct {
		obj  client.Object
		name string
	}{{&istionetv1.VirtualService{}, "web"}, {&istionetv1.DestinationRule{}, "web-primary"}, {&istionetv1.DestinationRule{}, "web-canary"}} {
		err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: key.name}, key.obj)
		if !apierrors.IsNotFound(err) {
			t.Errorf("%T %s after Finalize: %v, want NotFound", key.obj, key.name, err)
		}
	}
	if err := r.Finalize(ctx, canary); err != nil {
		t.Errorf("second Finalize: %v", err)
	}
}

// TestGeneratedInvalidTrafficPolicy: an unusable trafficPolicy is a clear error and nothing is
// created.
func TestGeneratedInvalidTrafficPolicy(t *testing.T) {
	testenv.Require(t, env)
	ctx := t.Context()
	ns := env.Namespace(t)
	canary := newCanary(t, ns, func(c *sluicev1.Canary) {
		webCanary(c)
		c.Spec.Service.TrafficPolicy = rawJSON(`{"loadBalancer":{"simple":"FASTEST"}}`)
	})
	err := New(env.Client).Reconcile(ctx, canary)
	if !errors.Is(err, ErrInvalidSpec) || !strings.Contains(err.Error(), "spec.service.trafficPolicy") {
		t.Fatalf("Reconcile = %v, want ErrInvalidSpec naming spec.service.trafficPolicy", err)
	}
	t.Log(err)
	vs := &istionetv1.VirtualService{}
	if err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "web"}, vs); !apierrors.IsNotFound(err) {
		t.Errorf("VirtualService after a failed Reconcile: %v, want NotFound", err)
	}
}

// TestGeneratedNotControlled: a VirtualService of the apex name that someone else owns is neither
// taken over nor deleted.
func TestGeneratedNotControlled(t *testing.T) {
	testenv.Require(t, env)
	ctx := t.Context()
	ns := env.Namespace(t)
	theirs, _ := createSeed(t, ns)
	canary := newCanary(t, ns, nil)
	r := New(env.Client)
	if err := r.Reconcile(ctx, canary); !errors.Is(err, ErrNotControlled) {
		t.Fatalf("Reconcile = %v, want ErrNotControlled", err)
	}
	if err := r.SetRoutes(ctx, canary, providers.CanaryWeight(10)); !errors.Is(err, ErrNotControlled) {
		t.Fatalf("SetRoutes = %v, want ErrNotControlled", err)
	}
	if err := r.Finalize(ctx, canary); err != nil {
		t.Fatal(err)
	}
	if got := getVS(t, ns, "user-service"); got.ResourceVersion != theirs.ResourceVersion {
		t.Error("someone else's VirtualService was written")
	}
}
