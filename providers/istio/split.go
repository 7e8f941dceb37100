package istio

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"
	networkingv1 "istio.io/api/networking/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/providers"
)

// ErrUnsupportedRoute means an HTTP route names the apex (or primary/canary) service in a way
// Sluice cannot split: mixed with other hosts, apex destinations that differ in port or headers,
// or more than one primary or canary destination.
var ErrUnsupportedRoute error = providers.Permanent(sluicev1.ReasonRouteError, "unsupported route")

// ErrNoApexRoute means a VirtualService has no HTTP route with a destination naming the apex
// service or its primary and canary services.
var ErrNoApexRoute error = providers.Permanent(sluicev1.ReasonRouteError, "no HTTP route to the apex service")

// hostRole is what a destination host names, relative to one Canary.
type hostRole int

const (
	roleOther hostRole = iota
	roleApex
	rolePrimary
	roleCanary
)

// scope identifies the services of one Canary: their names and the namespace short names resolve in.
type scope struct {
	names     sluicev1.ServiceNames
	namespace string
}

// role classifies host.
func (s scope) role(host string) hostRole {
	switch {
	case namesService(host, s.names.Apex, s.namespace):
		return roleApex
	case namesService(host, s.names.Primary, s.namespace):
		return rolePrimary
	case namesService(host, s.names.Canary, s.namespace):
		return roleCanary
	}
	return roleOther
}

// namesService reports whether host is svc, svc.ns, svc.ns.svc or svc.ns.svc.<cluster domain>.
func namesService(host, svc, ns string) bool {
	if host == svc {
		return true
	}
	rest, ok := strings.CutPrefix(host, svc+".")
	if !ok {
		return false
	}
	nsPart, tail, _ := strings.Cut(rest, ".")
	return nsPart == ns && (tail == "" || tail == "svc" || strings.HasPrefix(tail, "svc."))
}

// renameHost swaps the service name at the front of host (as namesService accepted it) for to,
// keeping the short or qualified form the user wrote.
func renameHost(host, from, to string) string {
	return to + strings.TrimPrefix(host, from)
}

// splitHTTP returns a copy of routes with every managed route's destinations set to w (see the
// package doc for the rules) and the number of managed routes; A/B routes are neither changed nor
// counted. routes is not modified.
// errors: ErrUnsupportedRoute, naming the route.
func (s scope) splitHTTP(routes []*networkingv1.HTTPRoute, w providers.Weights) ([]*networkingv1.HTTPRoute, int, error) {
	out := make([]*networkingv1.HTTPRoute, len(routes))
	managed := 0
	for i, r := range routes {
		if isCopyRoute(r) { // left to withABRoutes and withExtras
			out[i] = r
			continue
		}
		dests, ok, err := s.splitRoute(r.GetRoute(), w)
		if err != nil {
			return nil, 0, fmt.Errorf("%s: %w", routeName(i, r), err)
		}
		if !ok {
			out[i] = r
			continue
		}
		managed++
		c := proto.CloneOf(r)
		c.Route = dests
		out[i] = c
	}
	return out, managed, nil
}

// splitRoute returns the destinations of one route with the split w, and false when the route
// names none of the Canary's services. errors: ErrUnsupportedRoute.
func (s scope) splitRoute(dests []*networkingv1.HTTPRouteDestination, w providers.Weights) ([]*networkingv1.HTTPRouteDestination, bool, error) {
	byRole, err := s.classify(dests)
	if err != nil || byRole == nil {
		return nil, false, err
	}
	if apex := byRole[roleApex]; len(apex) > 0 {
		tmpl, err := apexTemplate(apex)
		if err != nil {
			return nil, false, err
		}
		host := tmpl.GetDestination().GetHost()
		p, c := proto.CloneOf(tmpl), proto.CloneOf(tmpl)
		p.Destination.Host = renameHost(host, s.names.Apex, s.names.Primary)
		c.Destination.Host = renameHost(host, s.names.Apex, s.names.Canary)
		p.Weight, c.Weight = w.Primary, w.Canary
		return []*networkingv1.HTTPRouteDestination{p, c}, true, nil
	}
	out := make([]*networkingv1.HTTPRouteDestination, 0, 2)
	for _, d := range dests {
		c := proto.CloneOf(d)
		if s.role(d.GetDestination().GetHost()) == rolePrimary {
			c.Weight = w.Primary
		} else {
			c.Weight = w.Canary
		}
		out = append(out, c)
	}
	if len(out) == 1 { // one of primary/canary: add the other, copied without the subset
		other := proto.CloneOf(out[0])
		other.Destination.Subset = ""
		host := out[0].GetDestination().GetHost()
		if len(byRole[rolePrimary]) == 1 {
			other.Destination.Host = renameHost(host, s.names.Primary, s.names.Canary)
			other.Weight = w.Canary
			out = append(out, other)
		} else {
			other.Destination.Host = renameHost(host, s.names.Canary, s.names.Primary)
			other.Weight = w.Primary
			out = append([]*networkingv1.HTTPRouteDestination{other}, out...)
		}
	}
	return out, true, nil
}

// classify groups dests by role; nil when none names the Canary's services.
// errors: ErrUnsupportedRoute for other hosts among them, apex mixed with primary/canary, or
// several primary or canary destinations.
func (s scope) classify(dests []*networkingv1.HTTPRouteDestination) (map[hostRole][]*networkingv1.HTTPRouteDestination, error) {
	byRole := map[hostRole][]*networkingv1.HTTPRouteDestination{}
	for _, d := range dests {
		r := s.role(d.GetDestination().GetHost())
		byRole[r] = append(byRole[r], d)
	}
	apex, prim, can, other := byRole[roleApex], byRole[rolePrimary], byRole[roleCanary], byRole[roleOther]
	switch {
	case len(apex)+len(prim)+len(can) == 0:
		return nil, nil
	case len(other) > 0:
		return nil, fmt.Errorf("%w: destinations of %s mixed with host %q", ErrUnsupportedRoute,
			s.names.Apex, other[0].GetDestination().GetHost())
	case len(apex) > 0 && len(prim)+len(can) > 0:
		return nil, fmt.Errorf("%w: destinations name both %s and %s/%s", ErrUnsupportedRoute,
			s.names.Apex, s.names.Primary, s.names.Canary)
	case len(prim) > 1 || len(can) > 1:
		return nil, fmt.Errorf("%w: more than one destination for %s or %s", ErrUnsupportedRoute,
			s.names.Primary, s.names.Canary)
	}
	return byRole, nil
}

// apexTemplate returns the first apex destination without weight and subset, after checking the
// others agree with it on host, port and headers. errors: ErrUnsupportedRoute.
func apexTemplate(apex []*networkingv1.HTTPRouteDestination) (*networkingv1.HTTPRouteDestination, error) {
	var tmpl *networkingv1.HTTPRouteDestination
	for _, d := range apex {
		n := proto.CloneOf(d)
		n.Weight = 0
		if n.Destination != nil {
			n.Destination.Subset = ""
		}
		if tmpl == nil {
			tmpl = n
			continue
		}
		if !proto.Equal(n, tmpl) {
			return nil, fmt.Errorf("%w: destinations of %s differ in host form, port or headers (%v, %v)",
				ErrUnsupportedRoute, tmpl.GetDestination().GetHost(), tmpl, n)
		}
	}
	return tmpl, nil
}

// weightsOf reads the split of the managed routes and their number, A/B routes left out.
// errors: ErrUnsupportedRoute; providers.ErrWeightDrift when a route's weights do not sum to
// TotalWeight or two routes disagree (someone edited them; SetRoutes puts them back).
func (s scope) weightsOf(routes []*networkingv1.HTTPRoute) (providers.Weights, int, error) {
	var first providers.Weights
	firstName, managed := "", 0
	for i, r := range routes {
		if isCopyRoute(r) {
			continue
		}
		w, ok, err := s.routeWeights(r.GetRoute())
		if err != nil {
			return providers.Weights{}, 0, fmt.Errorf("%s: %w", routeName(i, r), err)
		}
		if !ok {
			continue
		}
		managed++
		if managed == 1 {
			first, firstName = w, routeName(i, r)
			continue
		}
		if w != first {
			return providers.Weights{}, 0, fmt.Errorf("%w: %s has primary=%d canary=%d but %s has primary=%d canary=%d",
				providers.ErrWeightDrift, firstName, first.Primary, first.Canary, routeName(i, r), w.Primary, w.Canary)
		}
	}
	return first, managed, nil
}

// routeWeights reads one route's split; false when it names none of the Canary's services. Apex
// destinations read as 100/0 (the apex Service selects the primary pods); a single destination
// takes all traffic whatever its weight, as in Istio.
func (s scope) routeWeights(dests []*networkingv1.HTTPRouteDestination) (providers.Weights, bool, error) {
	byRole, err := s.classify(dests)
	if err != nil || byRole == nil {
		return providers.Weights{}, false, err
	}
	if len(byRole[roleApex]) > 0 {
		return providers.CanaryWeight(0), true, nil
	}
	if len(dests) == 1 {
		if len(byRole[rolePrimary]) == 1 {
			return providers.CanaryWeight(0), true, nil
		}
		return providers.CanaryWeight(providers.TotalWeight), true, nil
	}
	w := providers.Weights{
		Primary: byRole[rolePrimary][0].GetWeight(),
		Canary:  byRole[roleCanary][0].GetWeight(),
	}
	if err := w.Validate(); err != nil {
		return providers.Weights{}, false, fmt.Errorf("%w: %w", providers.ErrWeightDrift, err)
	}
	return w, true, nil
}

// routeName names spec.http[i] in messages, with its name when it has one.
func routeName(i int, r *networkingv1.HTTPRoute) string {
	if r.GetName() != "" {
		return fmt.Sprintf("http[%d] (%s)", i, r.GetName())
	}
	return fmt.Sprintf("http[%d]", i)
}
