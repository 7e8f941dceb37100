package tenancy

import (
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

func routeCanary(provider sluicev1.Provider, svc sluicev1.CanaryService) *sluicev1.Canary {
	return &sluicev1.Canary{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "app"},
		Spec:       sluicev1.CanarySpec{Provider: provider, Service: svc},
	}
}

func mustRoutePolicy(t *testing.T, hostnames, parents []string, domain string) RoutePolicy {
	t.Helper()
	p, err := NewRoutePolicy(hostnames, parents, domain)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Istio hosts name only the Canary's namespace (short names resolve there), in every spelling
// of a Service name; another namespace's names, wildcards across namespaces and external hosts
// are refused unless the hostname allow-list admits them.
func TestRoutePolicyIstioHosts(t *testing.T) {
	open := mustRoutePolicy(t, []string{"*.example.com", "tenant-a/shop.example.org", "tenant-b/b.example.org"}, nil, "")
	custom := mustRoutePolicy(t, nil, nil, "corp.internal")
	everything := mustRoutePolicy(t, []string{"*"}, nil, "")
	for _, tc := range []struct {
		name   string
		policy RoutePolicy
		host   string
		refuse string // "" allowed, else a fragment of the message
	}{
		{"short name", RoutePolicy{}, "reviews", ""},
		{"service.namespace", RoutePolicy{}, "reviews.tenant-a", ""},
		{"service.namespace.svc", RoutePolicy{}, "reviews.tenant-a.svc", ""},
		{"fqdn", RoutePolicy{}, "reviews.tenant-a.svc.cluster.local", ""},
		{"fqdn with trailing dot and capitals", RoutePolicy{}, "Reviews.Tenant-A.svc.cluster.local.", ""},
		{"wildcard of the namespace", RoutePolicy{}, "*.tenant-a.svc.cluster.local", ""},
		{"other namespace short form", RoutePolicy{}, "payments.tenant-b", "names namespace tenant-b"},
		{"other namespace .svc", RoutePolicy{}, "payments.tenant-b.svc", "names namespace tenant-b"},
		{"other namespace fqdn", RoutePolicy{}, "payments.tenant-b.svc.cluster.local", `"payments.tenant-b.svc.cluster.local" names namespace tenant-b`},
		{"other namespace fqdn, capitals", RoutePolicy{}, "PAYMENTS.TENANT-B.SVC.CLUSTER.LOCAL", "names namespace tenant-b"},
		{"wildcard of another namespace", RoutePolicy{}, "*.tenant-b.svc.cluster.local", "names namespace tenant-b"},
		{"every host", RoutePolicy{}, "*", "matches every host"},
		{"every service", RoutePolicy{}, "*.svc.cluster.local", "matches services of every namespace"},
		{"every cluster name", RoutePolicy{}, "*.cluster.local", "matches services of every namespace"},
		{"every .svc", RoutePolicy{}, "*.svc", "matches services of every namespace"},
		{"every .local", RoutePolicy{}, "*.local", "matches services of every namespace"},
		{"two-label wildcard", RoutePolicy{}, "*.tenant-a", "is not a name of namespace tenant-a"},
		{"own namespace, another cluster domain", RoutePolicy{}, "reviews.tenant-a.svc.evil.example", "outside the cluster domain cluster.local"},
		{"custom cluster domain", custom, "reviews.tenant-a.svc.corp.internal", ""},
		{"default domain under a custom one", custom, "reviews.tenant-a.svc.cluster.local", "outside the cluster domain corp.internal"},
		{"external host", RoutePolicy{}, "shop.example.com", "is not a name of namespace tenant-a"},
		{"IP address", RoutePolicy{}, "10.96.0.10", "is not a name of namespace tenant-a"},
		{"not a host name", RoutePolicy{}, "a..b", "is not a host name"},
		{"IPv6", RoutePolicy{}, "[::1]", "is not a host name"},
		{"allowed by suffix", open, "shop.example.com", ""},
		{"allowed by suffix, deeper", open, "a.shop.example.com", ""},
		{"wildcard within the allowed suffix", open, "*.example.com", ""},
		{"wildcard below the allowed suffix", open, "*.eu.example.com", ""},
		{"the suffix itself is not below it", open, "example.com", "names namespace com"},
		{"wider wildcard than allowed", open, "*.com", "is not a name of namespace tenant-a"},
		{"allowed for this namespace", open, "shop.example.org", ""},
		{"allowed for another namespace only", open, "b.example.org", "is not a name of namespace tenant-a"},
		{"allow-list * admits another namespace", everything, "payments.tenant-b.svc.cluster.local", ""},
		{"allow-list * admits *", everything, "*", ""},
		{"allow-list * still needs a host name", everything, "a..b", "is not a host name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.policy.CheckCanary(routeCanary(sluicev1.ProviderIstio, sluicev1.CanaryService{
				Hosts: []string{"app", tc.host}}))
			checkRefusal(t, err, tc.refuse, "spec.service.hosts[1]")
		})
	}
}

// Istio gateways: mesh and the namespace's gateways in every spelling Istio accepts; another
// namespace's (namespace/name or the legacy FQDN) only from the parent allow-list.
func TestRoutePolicyIstioGateways(t *testing.T) {
	allowed := mustRoutePolicy(t, nil, []string{"istio-system/ingress", "shared-gw/*"}, "")
	for _, tc := range []struct {
		name    string
		policy  RoutePolicy
		gateway string
		refuse  string
	}{
		{"mesh", RoutePolicy{}, "mesh", ""},
		{"short name", RoutePolicy{}, "gw", ""},
		{"dot slash", RoutePolicy{}, "./gw", ""},
		{"own namespace", RoutePolicy{}, "tenant-a/gw", ""},
		{"legacy fqdn of own namespace", RoutePolicy{}, "gw.tenant-a.svc.cluster.local", ""},
		{"other tenant", RoutePolicy{}, "tenant-b/gw", `"tenant-b/gw" is a gateway of namespace tenant-b`},
		{"shared ingress", RoutePolicy{}, "istio-system/ingress", "is a gateway of namespace istio-system"},
		{"legacy fqdn of another namespace", RoutePolicy{}, "ingress.istio-system.svc.cluster.local", "is a gateway of namespace istio-system"},
		{"legacy two labels", RoutePolicy{}, "ingress.istio-system", "is a gateway of namespace istio-system"},
		{"not a gateway name", RoutePolicy{}, "a/b/c", "is not a gateway name"},
		{"empty namespace", RoutePolicy{}, "/gw", "is not a gateway name"},
		{"allowed gateway", allowed, "istio-system/ingress", ""},
		{"allowed gateway, legacy fqdn", allowed, "ingress.istio-system.svc.cluster.local", ""},
		{"other gateway of the allowed one's namespace", allowed, "istio-system/internal", "is a gateway of namespace istio-system"},
		{"every gateway of an allowed namespace", allowed, "shared-gw/any", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.policy.CheckCanary(routeCanary(sluicev1.ProviderIstio, sluicev1.CanaryService{
				Gateways: []string{"mesh", tc.gateway}}))
			checkRefusal(t, err, tc.refuse, "spec.service.gateways[1]")
		})
	}
}

// Gateway API parents outside the namespace only from the parent allow-list; hostnames are
// literal (a single label names no namespace); a route on an allowed Gateway outside the
// namespace must name its hostnames.
func TestRoutePolicyGatewayAPI(t *testing.T) {
	allowed := mustRoutePolicy(t, []string{"*.example.com"}, []string{"infra/public", "mesh-ns/*"}, "")
	gateway := func(ns, name string) gwv1.ParentReference {
		ref := gwv1.ParentReference{Name: gwv1.ObjectName(name)}
		if ns != "" {
			ref.Namespace = ptr.To(gwv1.Namespace(ns))
		}
		return ref
	}
	service := func(ns, name string) gwv1.ParentReference {
		ref := gateway(ns, name)
		ref.Group, ref.Kind = ptr.To(gwv1.Group("")), ptr.To(gwv1.Kind("Service"))
		return ref
	}
	for _, tc := range []struct {
		name    string
		policy  RoutePolicy
		parents []gwv1.ParentReference
		hosts   []string
		refuse  string
		field   string
	}{
		{"no parents (the apex Service)", RoutePolicy{}, nil, nil, "", ""},
		{"gateway of the namespace", RoutePolicy{}, []gwv1.ParentReference{gateway("", "gw"), gateway("tenant-a", "gw2")}, nil, "", ""},
		{"gateway of another tenant", RoutePolicy{}, []gwv1.ParentReference{gateway("tenant-b", "gw")}, []string{"app.tenant-a"},
			"Gateway tenant-b/gw is in namespace tenant-b", "spec.service.gatewayRefs[0]"},
		{"service of another tenant", RoutePolicy{}, []gwv1.ParentReference{gateway("", "gw"), service("tenant-b", "payments")}, nil,
			"Service tenant-b/payments is in namespace tenant-b", "spec.service.gatewayRefs[1]"},
		{"allowed gateway with allowed hostname", allowed, []gwv1.ParentReference{gateway("infra", "public")}, []string{"shop.example.com"}, "", ""},
		{"allowed gateway without hostnames", allowed, []gwv1.ParentReference{gateway("infra", "public")}, nil,
			"would match every hostname of Gateway infra/public", "spec.service.hosts is empty"},
		{"allowed service parent without hostnames", allowed, []gwv1.ParentReference{service("mesh-ns", "api")}, nil, "", ""},
		{"not allowed gateway in an allowed gateway's namespace", allowed, []gwv1.ParentReference{gateway("infra", "private")}, []string{"shop.example.com"},
			"Gateway infra/private is in namespace infra", "spec.service.gatewayRefs[0]"},
		{"hostname of another tenant", RoutePolicy{}, nil, []string{"payments.tenant-b.svc.cluster.local"},
			"names namespace tenant-b", "spec.service.hosts[0]"},
		{"single-label hostname", RoutePolicy{}, nil, []string{"app"}, "single-label hostname", "spec.service.hosts[0]"},
		{"own namespace hostname", RoutePolicy{}, nil, []string{"app.tenant-a.svc.cluster.local"}, "", ""},
		{"parent of a kind no policy knows", RoutePolicy{}, []gwv1.ParentReference{{Group: ptr.To(gwv1.Group("example.io")), Kind: ptr.To(gwv1.Kind("Mesh")), Name: "all"}}, nil,
			`is of kind Mesh (group "example.io")`, "spec.service.gatewayRefs[0]"},
		{"service kind in the gateway group", RoutePolicy{}, []gwv1.ParentReference{{Kind: ptr.To(gwv1.Kind("Service")), Name: "api"}}, nil,
			"is of kind Service", "spec.service.gatewayRefs[0]"},
		{"listener set of the namespace", RoutePolicy{}, []gwv1.ParentReference{{Kind: ptr.To(gwv1.Kind("ListenerSet")), Name: "ls"}}, nil, "", ""},
		{"external hostname not allowed", allowed, []gwv1.ParentReference{gateway("infra", "public")}, []string{"shop.example.net"},
			"is not a name of namespace tenant-a", "spec.service.hosts[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, provider := range []sluicev1.Provider{"", sluicev1.ProviderGatewayAPI} {
				err := tc.policy.CheckCanary(routeCanary(provider, sluicev1.CanaryService{GatewayRefs: tc.parents, Hosts: tc.hosts}))
				checkRefusal(t, err, tc.refuse, tc.field)
			}
		})
	}
}

// Every refused field is named, in spec order; fields a provider does not write are not checked,
// and nothing is checked for a routeRef or provider kubernetes.
func TestRoutePolicyFieldsByProvider(t *testing.T) {
	svc := sluicev1.CanaryService{
		Hosts:       []string{"payments.tenant-b.svc.cluster.local", "ok", "*"},
		Gateways:    []string{"istio-system/ingress"},
		GatewayRefs: []gwv1.ParentReference{{Name: "gw", Namespace: ptr.To(gwv1.Namespace("tenant-b"))}},
	}
	err := RoutePolicy{}.CheckCanary(routeCanary(sluicev1.ProviderIstio, svc))
	if !errors.Is(err, ErrRouteRefused) {
		t.Fatalf("istio: want ErrRouteRefused, got %v", err)
	}
	msg := err.Error()
	want := []string{
		`spec.service.hosts[0] "payments.tenant-b.svc.cluster.local" names namespace tenant-b`,
		`spec.service.hosts[2] "*" matches every host`,
		`spec.service.gateways[0] "istio-system/ingress" is a gateway of namespace istio-system`,
		"--allowed-route-hostnames",
	}
	last := -1
	for _, w := range want {
		i := strings.Index(msg, w)
		if i < 0 || i < last {
			t.Errorf("istio message %q: want %q after the previous fragments", msg, w)
		}
		last = i
	}
	if strings.Contains(msg, "gatewayRefs") || strings.Contains(msg, `hosts[1]`) {
		t.Errorf("istio message %q names a field the VirtualService does not carry or an allowed host", msg)
	}

	err = RoutePolicy{}.CheckCanary(routeCanary(sluicev1.ProviderGatewayAPI, svc))
	if msg := err.Error(); !strings.Contains(msg, "spec.service.gatewayRefs[0] Gateway tenant-b/gw") || strings.Contains(msg, "gateways[0]") ||
		!strings.Contains(msg, `spec.service.hosts[1] "ok" is a single-label hostname`) {
		t.Errorf("gatewayapi message %q", msg)
	}

	ref := svc
	ref.RouteRef = &sluicev1.RouteReference{Kind: "VirtualService", Name: "app"}
	if err := (RoutePolicy{}).CheckCanary(routeCanary(sluicev1.ProviderIstio, ref)); err != nil {
		t.Errorf("routeRef: Sluice writes no hosts or gateways, want nil, got %v", err)
	}
	if err := (RoutePolicy{}).CheckCanary(routeCanary(sluicev1.ProviderKubernetes, svc)); err != nil {
		t.Errorf("kubernetes: Sluice writes only the Canary's Services, want nil, got %v", err)
	}
}

// Allow-list entries are validated when the controller starts; a bad one is named.
func TestNewRoutePolicyRejectsBadEntries(t *testing.T) {
	for _, tc := range []struct {
		hostnames, parents []string
		domain             string
		want               string
	}{
		{hostnames: []string{"shop..example.com"}, want: `"shop..example.com"`},
		{hostnames: []string{"Bad_NS/shop.example.com"}, want: "is not a namespace name"},
		{hostnames: []string{"shop.*.com"}, want: `"shop.*.com"`},
		{parents: []string{"ingress"}, want: `allowed route parent "ingress"`},
		{parents: []string{"istio-system/"}, want: `"istio-system/"`},
		{parents: []string{"*/ingress"}, want: `"*/ingress"`},
		{domain: "a..b", want: "cluster domain"},
	} {
		_, err := NewRoutePolicy(tc.hostnames, tc.parents, tc.domain)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewRoutePolicy(%q, %q, %q) = %v, want an error containing %q", tc.hostnames, tc.parents, tc.domain, err, tc.want)
		}
	}
	if _, err := NewRoutePolicy([]string{" *.Example.COM ", "", "tenant-a/*", "*"}, []string{"istio-system/*", " infra/public "}, "cluster.local."); err != nil {
		t.Errorf("valid entries refused: %v", err)
	}
}

func checkRefusal(t *testing.T, err error, refuse, field string) {
	t.Helper()
	if refuse == "" {
		if err != nil {
			t.Fatalf("want allowed, got %v", err)
		}
		return
	}
	if !errors.Is(err, ErrRouteRefused) {
		t.Fatalf("want ErrRouteRefused, got %v", err)
	}
	if !strings.Contains(err.Error(), field) || !strings.Contains(err.Error(), refuse) {
		t.Fatalf("message %q: want field %q and %q", err, field, refuse)
	}
}
