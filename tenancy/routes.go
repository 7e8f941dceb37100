package tenancy

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// ErrRouteRefused means a route Sluice would generate for a Canary reaches outside the Canary's
// namespace in a way the route policy does not allow. Test it with errors.Is.
var ErrRouteRefused = errors.New("route refused")

// DefaultClusterDomain is the cluster's DNS domain when none is configured.
const DefaultClusterDomain = "cluster.local"

// istioMeshGateway is the Istio gateway name of every sidecar of the mesh.
const istioMeshGateway = "mesh"

// RoutePolicy decides what the routes Sluice generates for a Canary (and writes with its own
// identity) may name: hosts, Istio gateways and Gateway API parents. Without an allow-list a route
// names only its own namespace: hosts of the Canary's namespace (short names, <service>.<ns>,
// <service>.<ns>.svc[.<cluster domain>], *.<ns>.svc[.<cluster domain>]), the Istio gateway mesh or
// gateways of the namespace, and Gateway API parents in the namespace. The operator's allow-lists
// add hostnames (exact or *.suffix, for every namespace or one) and parents outside the namespace.
// The zero value allows only the Canary's own namespace in cluster.local. Immutable; safe for
// concurrent use.
type RoutePolicy struct {
	hostnames     []hostAllowance
	parents       []parentAllowance
	clusterDomain string
}

// hostAllowance is one allowed hostname pattern: "*" (every host), "*.suffix" (every name below
// suffix) or an exact name, for the Canaries of namespace ("" every namespace).
type hostAllowance struct {
	namespace, pattern string
}

// parentAllowance is one allowed route parent outside the Canary's namespace: name in namespace
// ("*": every parent of the namespace).
type parentAllowance struct {
	namespace, name string
}

// NewRoutePolicy returns the policy allowing, besides each Canary's own namespace, hostnames
// (entries "pattern" for every namespace or "namespace/pattern" for one; a pattern is "*",
// "*.example.com" or "shop.example.com") and parents ("namespace/name" or "namespace/*": Istio
// gateways and Gateway API parentRefs of any kind). clusterDomain "" is DefaultClusterDomain.
// errors: an entry that is none of these, naming it.
func NewRoutePolicy(hostnames, parents []string, clusterDomain string) (RoutePolicy, error) {
	p := RoutePolicy{clusterDomain: strings.ToLower(strings.Trim(clusterDomain, "."))}
	if p.clusterDomain != "" && validHost(p.clusterDomain) != nil {
		return RoutePolicy{}, fmt.Errorf("cluster domain %q is not a DNS name", clusterDomain)
	}
	for _, raw := range hostnames {
		e := strings.ToLower(strings.TrimSpace(raw))
		if e == "" {
			continue
		}
		ns, pattern, scoped := strings.Cut(e, "/")
		if !scoped {
			ns, pattern = "", e
		} else if len(validation.IsDNS1123Label(ns)) > 0 {
			return RoutePolicy{}, fmt.Errorf("allowed route hostname %q: %q is not a namespace name", raw, ns)
		}
		pattern = strings.TrimSuffix(pattern, ".")
		if pattern != "*" && validHost(pattern) != nil {
			return RoutePolicy{}, fmt.Errorf("allowed route hostname %q: want *, *.domain or a host name, optionally after namespace/", raw)
		}
		p.hostnames = append(p.hostnames, hostAllowance{namespace: ns, pattern: pattern})
	}
	for _, raw := range parents {
		e := strings.TrimSpace(raw)
		if e == "" {
			continue
		}
		ns, name, ok := strings.Cut(e, "/")
		if !ok || len(validation.IsDNS1123Label(ns)) > 0 || (name != "*" && len(validation.IsDNS1123Subdomain(name)) > 0) {
			return RoutePolicy{}, fmt.Errorf("allowed route parent %q: want namespace/name or namespace/*", raw)
		}
		p.parents = append(p.parents, parentAllowance{namespace: ns, name: name})
	}
	return p, nil
}

// domain is the cluster's DNS domain.
func (p RoutePolicy) domain() string {
	if p.clusterDomain == "" {
		return DefaultClusterDomain
	}
	return p.clusterDomain
}

// allowsParent reports whether the allow-list admits parent name in namespace ns.
func (p RoutePolicy) allowsParent(ns, name string) bool {
	for _, a := range p.parents {
		if a.namespace == ns && (a.name == "*" || a.name == name) {
			return true
		}
	}
	return false
}

// CheckCanary checks every field of c's spec that the route generated for it carries and that can
// name something outside c's namespace: with provider istio spec.service.hosts and gateways, with
// gatewayapi (the default) spec.service.gatewayRefs and hosts (hostnames; a parent outside the
// namespace other than a Service also needs hosts, or the route would match every hostname of
// that parent). Nothing is checked for a routeRef (Sluice edits only the backends of a route its
// owner wrote, in c's namespace, and never its hosts or parents) or provider kubernetes (Sluice
// writes only the Canary's own Services). It reads nothing. errors: ErrRouteRefused naming every
// refused field in spec order, with what would be allowed.
func (p RoutePolicy) CheckCanary(c *sluicev1.Canary) error {
	svc := &c.Spec.Service
	if svc.RouteRef != nil {
		return nil
	}
	var refused []string
	switch c.Spec.Provider {
	case sluicev1.ProviderIstio:
		refused = p.checkIstio(c.Namespace, svc)
	case sluicev1.ProviderGatewayAPI, "":
		refused = p.checkGatewayAPI(c.Namespace, svc)
	default:
		return nil
	}
	if len(refused) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s; a generated route may name only hosts, gateways and parents of namespace %s, and the hostnames and parents the controller's --allowed-route-hostnames and --allowed-route-parents allow",
		ErrRouteRefused, strings.Join(refused, "; "), c.Namespace)
}

// checkIstio checks a generated VirtualService's hosts and gateways; short host names are the
// namespace's (Istio resolves them in the VirtualService's namespace).
func (p RoutePolicy) checkIstio(ns string, svc *sluicev1.CanaryService) []string {
	var refused []string
	for i, h := range svc.Hosts {
		if why := p.hostRefusal(ns, h, true); why != "" {
			refused = append(refused, fmt.Sprintf("spec.service.hosts[%d] %q %s", i, h, why))
		}
	}
	for i, g := range svc.Gateways {
		if why := p.istioGatewayRefusal(ns, g); why != "" {
			refused = append(refused, fmt.Sprintf("spec.service.gateways[%d] %q %s", i, g, why))
		}
	}
	return refused
}

// istioGatewayRefusal says why a VirtualService in namespace ns may not bind to gateway g ("":
// it may). g is mesh, a name in ns, "./name", "namespace/name" or the legacy
// "name.namespace.svc.<domain>", resolved as Istio does.
func (p RoutePolicy) istioGatewayRefusal(ns, g string) string {
	if g == istioMeshGateway {
		return ""
	}
	gwNS, name, ok := strings.Cut(g, "/")
	switch {
	case ok && gwNS == ".":
		gwNS = ns
	case ok:
	case strings.Contains(g, "."):
		name, gwNS, _ = strings.Cut(g, ".")
		gwNS, _, _ = strings.Cut(gwNS, ".")
	default:
		gwNS, name = ns, g
	}
	if name == "" || gwNS == "" || strings.Contains(name, "/") {
		return "is not a gateway name (mesh, name, namespace/name)"
	}
	if gwNS == ns || p.allowsParent(gwNS, name) {
		return ""
	}
	return fmt.Sprintf("is a gateway of namespace %s", gwNS)
}

// knownParentKinds are the group/kind of the parents a generated HTTPRoute may have: namespaced
// kinds whose namespace the policy can judge. Any other kind (cluster-scoped, or one no policy
// knows) is refused.
var knownParentKinds = map[string]bool{
	"gateway.networking.k8s.io/Gateway":        true,
	"gateway.networking.k8s.io/ListenerSet":    true,
	"gateway.networking.x-k8s.io/XListenerSet": true,
	"/Service": true,
}

// checkGatewayAPI checks a generated HTTPRoute's parentRefs and hostnames. Hostnames are matched
// literally against the Host header (nothing resolves them in a namespace), so a single-label
// hostname is no namespace's name.
func (p RoutePolicy) checkGatewayAPI(ns string, svc *sluicev1.CanaryService) []string {
	var refused []string
	var openParent string // a parent outside ns that is not a Service: it needs hostnames
	for i, ref := range svc.GatewayRefs {
		parentNS := ns
		if ref.Namespace != nil && *ref.Namespace != "" {
			parentNS = string(*ref.Namespace)
		}
		group, kind := "gateway.networking.k8s.io", "Gateway"
		if ref.Group != nil {
			group = string(*ref.Group)
		}
		if ref.Kind != nil {
			kind = string(*ref.Kind)
		}
		if !knownParentKinds[group+"/"+kind] {
			refused = append(refused, fmt.Sprintf("spec.service.gatewayRefs[%d] is of kind %s (group %q): a parent must be a Gateway, a ListenerSet or a Service",
				i, kind, group))
			continue
		}
		if parentNS == ns {
			continue
		}
		if !p.allowsParent(parentNS, string(ref.Name)) {
			refused = append(refused, fmt.Sprintf("spec.service.gatewayRefs[%d] %s %s/%s is in namespace %s",
				i, kind, parentNS, ref.Name, parentNS))
			continue
		}
		if kind != "Service" && openParent == "" {
			openParent = fmt.Sprintf("%s %s/%s", kind, parentNS, ref.Name)
		}
	}
	for i, h := range svc.Hosts {
		if why := p.hostRefusal(ns, h, false); why != "" {
			refused = append(refused, fmt.Sprintf("spec.service.hosts[%d] %q %s", i, h, why))
		}
	}
	if openParent != "" && len(svc.Hosts) == 0 {
		refused = append(refused, fmt.Sprintf("spec.service.hosts is empty: the route would match every hostname of %s", openParent))
	}
	return refused
}
