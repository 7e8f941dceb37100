package v1alpha1_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/test/testenv"
)

// The route fields a controller checks against its route policy have bounded size at admission
// (at most 16 hosts and 16 gateways of bounded length): the policy's work per Canary is bounded.
// Whether a host or gateway names another namespace is the controller's check, not admission's: a
// CRD validation rule cannot read metadata.namespace (the apiserver refuses such a rule with
// "undefined field 'namespace'"), and the allow-lists are the operator's configuration.
func TestRouteFieldsBoundedAtAdmission(t *testing.T) {
	testenv.Require(t, env)
	ns := env.Namespace(t)
	many := make([]string, 17)
	for i := range many {
		many[i] = fmt.Sprintf("h%d", i)
	}
	for i, tc := range []struct {
		name   string
		mutate func(*sluicev1.CanaryService)
		want   string
	}{
		{"17 hosts", func(s *sluicev1.CanaryService) { s.Hosts = many }, "spec.service.hosts: Too many: 17"},
		{"17 gateways", func(s *sluicev1.CanaryService) { s.Gateways = many }, "spec.service.gateways: Too many: 17"},
		{"host longer than a DNS name", func(s *sluicev1.CanaryService) { s.Hosts = []string{strings.Repeat("a", 254)} }, "spec.service.hosts[0]: Too long"},
		{"gateway longer than namespace/name", func(s *sluicev1.CanaryService) { s.Gateways = []string{strings.Repeat("g", 318)} }, "spec.service.gateways[0]: Too long"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := seedCanary()
			c.Name, c.Namespace = fmt.Sprintf("bounded-%d", i), ns
			c.Spec.Provider = sluicev1.ProviderIstio // the provider whose generated route has both
			tc.mutate(&c.Spec.Service)
			err := env.Client.Create(context.Background(), c)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want rejection naming %q, got %v", tc.want, err)
			}
		})
	}
	ok := seedCanary()
	ok.Name, ok.Namespace, ok.Spec.Provider = "bounded-ok", ns, sluicev1.ProviderIstio
	ok.Spec.Service.Hosts, ok.Spec.Service.Gateways = many[:16], []string{"mesh", "istio-system/ingress"}
	if err := env.Client.Create(context.Background(), ok); err != nil {
		t.Fatalf("16 hosts and a namespace/name gateway refused: %v", err)
	}
}

// spec.service.routeRef names a route of the Canary's own namespace only: the reference has no
// namespace field, and one written anyway is refused (strict field validation) or dropped, so
// Sluice never edits a route of another namespace.
func TestRouteRefHasNoNamespace(t *testing.T) {
	testenv.Require(t, env)
	ctx := context.Background()
	ns := env.Namespace(t)
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": sluicev1.GroupVersion.String(), "kind": "Canary",
		"metadata": map[string]any{"name": "ref", "namespace": ns},
		"spec": map[string]any{
			"targetRef": map[string]any{"kind": "Deployment", "name": "app"},
			"provider":  "istio",
			"service": map[string]any{"port": int64(8080),
				"routeRef": map[string]any{"kind": "VirtualService", "name": "payments", "namespace": "tenant-b"}},
			"analysis": map[string]any{"interval": "1m", "stepWeight": int64(10), "maxWeight": int64(50)},
		},
	}}
	strict := u.DeepCopy()
	if err := env.Client.Create(ctx, strict, client.FieldValidation("Strict")); err == nil || !strings.Contains(err.Error(), `unknown field "spec.service.routeRef.namespace"`) {
		t.Fatalf("strict create with routeRef.namespace = %v, want an unknown-field error", err)
	}
	if err := env.Client.Create(ctx, u); err != nil {
		t.Fatal(err)
	}
	got := &sluicev1.Canary{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(u), got); err != nil {
		t.Fatal(err)
	}
	stored := &unstructured.Unstructured{}
	stored.SetGroupVersionKind(sluicev1.GroupVersion.WithKind("Canary"))
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(u), stored); err != nil {
		t.Fatal(err)
	}
	if v, found, _ := unstructured.NestedString(stored.Object, "spec", "service", "routeRef", "namespace"); found {
		t.Fatalf("routeRef.namespace %q was stored", v)
	}
	if got.Spec.Service.RouteRef == nil || got.Spec.Service.RouteRef.Name != "payments" {
		t.Fatalf("routeRef = %+v", got.Spec.Service.RouteRef)
	}
}
