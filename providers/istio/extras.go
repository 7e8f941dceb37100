package istio

import (
	"fmt"
	"regexp"
	"strings"

	"google.golang.org/protobuf/proto"
	networkingv1 "istio.io/api/networking/v1"

	"sluice.dev/sluice/providers"
)

// extras is the routing Sluice adds to the managed routes besides weights and A/B routes, as read
// from or written to a VirtualService: request mirroring to the canary, and session affinity.
type extras struct {
	// mirror is the percentage of a managed route's requests mirrored to the canary; 0: none.
	mirror int32
	// cookie is the session-affinity cookie "name=value"; "": none. setCookie is the Set-Cookie
	// header value the canary's responses carry.
	cookie, setCookie string
}

// setCookieHeader is the response header that hands out the affinity cookie; Istio header names
// are lower case.
const setCookieHeader = "set-cookie"

// ourSetCookie matches the Set-Cookie values Sluice writes (see providers.AffinityCookie).
var ourSetCookie = regexp.MustCompile(`^([^=;\s]+=` + regexp.QuoteMeta(providers.AffinityCookieValuePrefix) + `[^;\s]*)(;|$)`)

// isAffinityRoute reports whether r is a session-affinity route Sluice wrote.
func isAffinityRoute(r *networkingv1.HTTPRoute) bool {
	return strings.HasPrefix(r.GetName(), providers.AffinityRuleNamePrefix)
}

// isCopyRoute reports whether r is a copy Sluice inserted before a managed route (A/B or session
// affinity): weights are read from and written to the other routes only.
func isCopyRoute(r *networkingv1.HTTPRoute) bool { return isABRoute(r) || isAffinityRoute(r) }

// managedRoute reports whether r is a route Sluice splits (not a copy, names the Canary's
// services).
func (s scope) managedRoute(r *networkingv1.HTTPRoute) bool {
	if isCopyRoute(r) {
		return false
	}
	byRole, err := s.classify(r.GetRoute())
	return err == nil && byRole != nil
}

func (s scope) isOurMirror(r *networkingv1.HTTPRoute) bool {
	return r.GetMirror() != nil && s.role(r.GetMirror().GetHost()) == roleCanary
}

// ourCookie returns the cookie and Set-Cookie value a canary destination hands out, if Sluice
// added them.
func (s scope) ourCookie(d *networkingv1.HTTPRouteDestination) (string, string) {
	if s.role(d.GetDestination().GetHost()) != roleCanary {
		return "", ""
	}
	v := d.GetHeaders().GetResponse().GetAdd()[setCookieHeader]
	if m := ourSetCookie.FindStringSubmatch(v); m != nil {
		return m[1], v
	}
	return "", ""
}

// extrasOf reads the extras of the first managed route that has any.
func (s scope) extrasOf(routes []*networkingv1.HTTPRoute) extras {
	var e extras
	for _, r := range routes {
		if !s.managedRoute(r) {
			continue
		}
		if s.isOurMirror(r) && e.mirror == 0 {
			e.mirror = providers.TotalWeight
			if p := r.GetMirrorPercentage(); p != nil {
				e.mirror = int32(p.GetValue())
			}
		}
		for _, d := range r.GetRoute() {
			if c, v := s.ourCookie(d); c != "" && e.cookie == "" {
				e.cookie, e.setCookie = c, v
			}
		}
	}
	return e
}

// withoutExtras returns routes without session-affinity routes, without the mirror to the canary
// and without the affinity Set-Cookie header on canary destinations (header operations left
// empty go too). routes is not modified.
func (s scope) withoutExtras(routes []*networkingv1.HTTPRoute) []*networkingv1.HTTPRoute {
	out := make([]*networkingv1.HTTPRoute, 0, len(routes))
	for _, r := range routes {
		if isAffinityRoute(r) {
			continue
		}
		if !s.managedRoute(r) {
			out = append(out, r)
			continue
		}
		c := proto.CloneOf(r)
		if s.isOurMirror(c) {
			c.Mirror, c.MirrorPercentage = nil, nil
		}
		for _, d := range c.Route {
			if cookie, _ := s.ourCookie(d); cookie == "" {
				continue
			}
			delete(d.Headers.Response.Add, setCookieHeader)
			if len(d.Headers.Response.Add) == 0 {
				d.Headers.Response.Add = nil
			}
			if proto.Equal(d.Headers.Response, &networkingv1.Headers_HeaderOperations{}) {
				d.Headers.Response = nil
			}
			if proto.Equal(d.Headers, &networkingv1.Headers{}) {
				d.Headers = nil
			}
		}
		out = append(out, c)
	}
	return out
}

// withExtras adds e to routes (which hold no extras): on every managed route the mirror to its
// canary destination (mirrorPercentage e.mirror) and, on its canary destinations, the response
// header Set-Cookie e.setCookie; then before every managed route i a session-affinity route named
// providers.AffinityRuleNamePrefix + i: a copy whose match also requires the cookie and whose
// destinations send everything to the canary (built as withABRoutes builds A/B routes: Istio
// takes the first matching route, so requests carrying the cookie go to the canary).
// errors: ErrInvalidSpec when a managed route already mirrors elsewhere or a canary destination
// already adds a Set-Cookie header; those of withABRoutes.
func (s scope) withExtras(routes []*networkingv1.HTTPRoute, e extras) ([]*networkingv1.HTTPRoute, error) {
	if e.mirror == 0 && e.cookie == "" {
		return routes, nil
	}
	out := make([]*networkingv1.HTTPRoute, len(routes))
	for i, r := range routes {
		out[i] = r
		if !s.managedRoute(r) {
			continue
		}
		c := proto.CloneOf(r)
		for _, d := range c.Route {
			if s.role(d.GetDestination().GetHost()) != roleCanary {
				continue
			}
			if e.mirror > 0 {
				if c.Mirror != nil || c.MirrorPercentage != nil || len(c.Mirrors) > 0 {
					return nil, fmt.Errorf("%w: %s already mirrors requests; Sluice's mirror to the canary needs the route's mirror field",
						ErrInvalidSpec, routeName(i, r))
				}
				c.Mirror = proto.CloneOf(d.Destination)
				c.MirrorPercentage = &networkingv1.Percent{Value: float64(e.mirror)}
			}
			if e.cookie != "" {
				if d.Headers == nil {
					d.Headers = &networkingv1.Headers{}
				}
				if d.Headers.Response == nil {
					d.Headers.Response = &networkingv1.Headers_HeaderOperations{}
				}
				if _, taken := d.Headers.Response.Add[setCookieHeader]; taken {
					return nil, fmt.Errorf("%w: %s: destination %s already adds a Set-Cookie response header; session affinity needs its own",
						ErrInvalidSpec, routeName(i, r), d.GetDestination().GetHost())
				}
				if d.Headers.Response.Add == nil {
					d.Headers.Response.Add = map[string]string{}
				}
				d.Headers.Response.Add[setCookieHeader] = e.setCookie
			}
		}
		out[i] = c
	}
	if e.cookie == "" {
		return out, nil
	}
	cookie := &networkingv1.HTTPMatchRequest{Headers: map[string]*networkingv1.StringMatch{
		"cookie": {MatchType: &networkingv1.StringMatch_Regex{Regex: `(^|.*;\s*)` + regexp.QuoteMeta(e.cookie) + `(;.*|$)`}},
	}}
	return s.insertCopies(out, []*networkingv1.HTTPMatchRequest{cookie}, providers.AffinityRuleNamePrefix)
}
