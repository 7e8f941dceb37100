package manager_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	istionetv1 "istio.io/client-go/pkg/apis/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/manager"
	"sluice.dev/sluice/test/testenv"
)

// The route allow-lists of the manager's options reach the canary controller: a gateway on
// AllowedRouteParents is routed to, another namespace's gateway stalls its Canary naming the
// field (one warning event) and no VirtualService is written for it. A malformed entry stops the
// manager from starting, naming the entry.
func TestRoutePolicyOptionsReachTheController(t *testing.T) {
	testenv.Require(t, env)
	ctx := context.Background()
	if _, err := manager.New(ctx, env.Config, manager.Options{AllowedRouteParents: []string{"ingress"},
		MetricsAddr: "0", ProbeAddr: "0", SkipNameValidation: true}); err == nil || !strings.Contains(err.Error(), `"ingress"`) {
		t.Fatalf("manager.New with parent entry \"ingress\" = %v, want an error naming it", err)
	}

	ns := env.Namespace(t)
	app(t, ns, "web", nil)
	app(t, ns, "api", nil)
	web, api := canaryFor(ns, "web"), canaryFor(ns, "api")
	web.Spec.Provider, api.Spec.Provider = sluicev1.ProviderIstio, sluicev1.ProviderIstio
	web.Spec.Service.Gateways = []string{"istio-system/ingress"}
	web.Spec.Service.Hosts = []string{"shop.example.com"}
	api.Spec.Service.Gateways = []string{"tenant-b/gw"}
	create(t, web, api)
	startManager(t, nil, manager.Options{Namespaces: []string{ns},
		AllowedRouteParents: []string{"istio-system/ingress"}, AllowedRouteHostnames: []string{"*.example.com"}})

	const refused = `spec.service.gateways[0] "tenant-b/gw" is a gateway of namespace tenant-b`
	waitCanary(t, ns, "api", 30*time.Second, "Stalled naming the foreign gateway", stalledWith(sluicev1.ReasonRouteRefused, refused))
	waitCanary(t, ns, "web", 30*time.Second, "Initialized", func(c *sluicev1.Canary) bool {
		return c.Status.Phase == sluicev1.CanaryPhaseInitialized
	})
	vs := &istionetv1.VirtualService{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, vs); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(vs.Spec.GetGateways(), []string{"istio-system/ingress"}) || !slices.Contains(vs.Spec.GetHosts(), "shop.example.com") {
		t.Errorf("VirtualService web: gateways %v hosts %v, want the allowed gateway and hostname", vs.Spec.GetGateways(), vs.Spec.GetHosts())
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "api"}, &istionetv1.VirtualService{}); !apierrors.IsNotFound(err) {
		t.Errorf("VirtualService api exists for a refused Canary (err %v)", err)
	}
	waitEvent(t, ns, "api", 10*time.Second, refused)
	n := 0
	for _, note := range eventNotes(t, ns, "api") {
		if strings.Contains(note, refused) {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d events name the refused gateway, want 1: %q", n, eventNotes(t, ns, "api"))
	}
}
