package gatewayapi

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"sluice.dev/sluice/providers"
)

// extras is the routing Sluice adds to the managed rules besides weights and A/B rules, as read
// from or written to a route: request mirroring to the canary, and session affinity.
type extras struct {
	// mirror is the percentage of a managed rule's requests mirrored to the canary; 0: none.
	mirror int32
	// cookie is the session-affinity cookie "name=value"; "": none. setCookie is the Set-Cookie
	// header value the canary's responses carry (the cookie and its attributes).
	cookie, setCookie string
}

// setCookieHeader is the response header that hands out the affinity cookie.
const setCookieHeader = "Set-Cookie"

// ourSetCookie matches the Set-Cookie values Sluice writes (see providers.AffinityCookie): the
// cookie's value starts with providers.AffinityCookieValuePrefix.
var ourSetCookie = regexp.MustCompile(`^([^=;\s]+=` + regexp.QuoteMeta(providers.AffinityCookieValuePrefix) + `[^;\s]*)(;|$)`)

// isAffinityRule reports whether rule is a session-affinity rule Sluice wrote.
func isAffinityRule(rule gwv1.HTTPRouteRule) bool {
	return rule.Name != nil && strings.HasPrefix(string(*rule.Name), providers.AffinityRuleNamePrefix)
}

// isCopyRule reports whether rule is a copy Sluice inserted before a managed rule (A/B or
// session affinity): weights are read from and written to the other rules only.
func isCopyRule(rule gwv1.HTTPRouteRule) bool { return isABRule(rule) || isAffinityRule(rule) }

// isOurMirror reports whether f is the RequestMirror filter to the canary that SetMirror writes.
func (s services) isOurMirror(f gwv1.HTTPRouteFilter) bool {
	return f.Type == gwv1.HTTPRouteFilterRequestMirror && f.RequestMirror != nil &&
		s.role(f.RequestMirror.BackendRef) == roleCanary
}

// extrasOf reads the extras of the first managed rule that has any.
func (s services) extrasOf(rules []gwv1.HTTPRouteRule) extras {
	var e extras
	for _, rule := range rules {
		if isCopyRule(rule) || !s.manages(rule.BackendRefs) {
			continue
		}
		for _, f := range rule.Filters {
			if s.isOurMirror(f) && e.mirror == 0 {
				e.mirror = ptr.Deref(f.RequestMirror.Percent, providers.TotalWeight)
			}
		}
		for _, b := range rule.BackendRefs {
			if s.role(b.BackendObjectReference) != roleCanary || e.cookie != "" {
				continue
			}
			for _, f := range b.Filters {
				if f.ResponseHeaderModifier == nil {
					continue
				}
				for _, h := range f.ResponseHeaderModifier.Add {
					if m := ourSetCookie.FindStringSubmatch(h.Value); m != nil && strings.EqualFold(string(h.Name), setCookieHeader) {
						e.cookie, e.setCookie = m[1], h.Value
					}
				}
			}
		}
	}
	return e
}

// withoutExtras returns rules without session-affinity rules, without the RequestMirror filters
// to the canary and without the affinity Set-Cookie header on canary backendRefs (a response
// header filter left empty goes too): the rules as they were before SetMirror and
// SetSessionAffinity.
func (s services) withoutExtras(rules []gwv1.HTTPRouteRule) []gwv1.HTTPRouteRule {
	out := make([]gwv1.HTTPRouteRule, 0, len(rules))
	for _, rule := range rules {
		if isAffinityRule(rule) {
			continue
		}
		if !s.manages(rule.BackendRefs) {
			out = append(out, rule)
			continue
		}
		rule = *rule.DeepCopy()
		rule.Filters = slices.DeleteFunc(rule.Filters, s.isOurMirror)
		if len(rule.Filters) == 0 {
			rule.Filters = nil
		}
		for i := range rule.BackendRefs {
			b := &rule.BackendRefs[i]
			if s.role(b.BackendObjectReference) != roleCanary {
				continue
			}
			for j := range b.Filters {
				if m := b.Filters[j].ResponseHeaderModifier; m != nil {
					m.Add = slices.DeleteFunc(m.Add, func(h gwv1.HTTPHeader) bool {
						return strings.EqualFold(string(h.Name), setCookieHeader) && ourSetCookie.MatchString(h.Value)
					})
					if len(m.Add) == 0 {
						m.Add = nil
					}
				}
			}
			b.Filters = slices.DeleteFunc(b.Filters, func(f gwv1.HTTPRouteFilter) bool {
				m := f.ResponseHeaderModifier
				return m != nil && len(m.Add) == 0 && len(m.Set) == 0 && len(m.Remove) == 0
			})
			if len(b.Filters) == 0 {
				b.Filters = nil
			}
		}
		out = append(out, rule)
	}
	return out
}

// withExtras adds e to rules (which hold no extras): on every managed rule a RequestMirror filter
// to its canary backendRef's Service and port (percent e.mirror), and an Add of the Set-Cookie
// header e.setCookie on its canary backendRefs; then before every managed rule i a
// session-affinity rule named providers.AffinityRuleNamePrefix + i: a copy of the rule whose
// matches also require the cookie and whose Canary backends send everything to the canary
// (built as withABRules builds A/B rules, so the same precedence argument holds: a request
// carrying the cookie goes to the canary).
// errors: ErrInvalidSpec (wrapped) when a canary backendRef already adds a Set-Cookie header,
// when a rule's matches cannot require the cookie, or the route would exceed its size limits.
func (s services) withExtras(rules []gwv1.HTTPRouteRule, e extras) ([]gwv1.HTTPRouteRule, error) {
	if e.mirror == 0 && e.cookie == "" {
		return rules, nil
	}
	out := make([]gwv1.HTTPRouteRule, len(rules))
	for i, rule := range rules {
		out[i] = rule
		if isCopyRule(rule) || !s.manages(rule.BackendRefs) {
			continue
		}
		rule = *rule.DeepCopy()
		if e.mirror > 0 {
			if port := s.canaryPort(rule); port != nil {
				rule.Filters = append(rule.Filters, gwv1.HTTPRouteFilter{Type: gwv1.HTTPRouteFilterRequestMirror,
					RequestMirror: &gwv1.HTTPRequestMirrorFilter{
						BackendRef: gwv1.BackendObjectReference{Group: ptr.To(gwv1.Group("")), Kind: ptr.To(gwv1.Kind("Service")),
							Name: gwv1.ObjectName(s.names.Canary), Port: port},
						Percent: ptr.To(e.mirror),
					}})
			}
		}
		if e.cookie != "" {
			if err := s.addSetCookie(&rule, e.setCookie); err != nil {
				return nil, fmt.Errorf("%s: %w", ruleName(i, rule), err)
			}
		}
		out[i] = rule
	}
	if e.cookie == "" {
		return out, nil
	}
	return s.insertCopies(out, []gwv1.HTTPRouteMatch{cookieMatch(e.cookie)}, providers.AffinityRuleNamePrefix)
}

// canaryPort is the port of the rule's first canary backendRef (it exists once the rule is
// split), nil when the rule has none.
func (s services) canaryPort(rule gwv1.HTTPRouteRule) *gwv1.PortNumber {
	for _, b := range rule.BackendRefs {
		if s.role(b.BackendObjectReference) == roleCanary && b.Port != nil {
			return ptr.To(*b.Port)
		}
	}
	return nil
}

// addSetCookie adds the Set-Cookie header to the response header filter of every canary
// backendRef of rule (creating the filter when there is none). errors: ErrInvalidSpec (wrapped)
// when the backendRef already adds a Set-Cookie header of its own (Add is a map keyed by name).
func (s services) addSetCookie(rule *gwv1.HTTPRouteRule, value string) error {
	header := gwv1.HTTPHeader{Name: setCookieHeader, Value: value}
	for i := range rule.BackendRefs {
		b := &rule.BackendRefs[i]
		if s.role(b.BackendObjectReference) != roleCanary {
			continue
		}
		j := slices.IndexFunc(b.Filters, func(f gwv1.HTTPRouteFilter) bool { return f.ResponseHeaderModifier != nil })
		if j < 0 {
			b.Filters = append(b.Filters, gwv1.HTTPRouteFilter{Type: gwv1.HTTPRouteFilterResponseHeaderModifier,
				ResponseHeaderModifier: &gwv1.HTTPHeaderFilter{Add: []gwv1.HTTPHeader{header}}})
			continue
		}
		m := b.Filters[j].ResponseHeaderModifier
		if slices.ContainsFunc(m.Add, func(h gwv1.HTTPHeader) bool { return strings.EqualFold(string(h.Name), setCookieHeader) }) {
			return fmt.Errorf("%w: backendRef %s already adds a Set-Cookie response header; session affinity needs its own",
				ErrInvalidSpec, b.Name)
		}
		m.Add = append(m.Add, header)
	}
	return nil
}

// cookieMatch matches requests whose Cookie header carries cookie ("name=value") as one of its
// cookies.
func cookieMatch(cookie string) gwv1.HTTPRouteMatch {
	return gwv1.HTTPRouteMatch{
		Path: defaultPath(),
		Headers: []gwv1.HTTPHeaderMatch{{
			Type: ptr.To(gwv1.HeaderMatchRegularExpression), Name: "Cookie",
			Value: `(^|.*;\s*)` + regexp.QuoteMeta(cookie) + `(;.*|$)`,
		}},
	}
}
