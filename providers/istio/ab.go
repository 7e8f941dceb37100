package istio

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"
	networkingv1 "istio.io/api/networking/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/providers"
)

// isABRoute reports whether r is an A/B route Sluice wrote (named providers.ABRuleNamePrefix…).
func isABRoute(r *networkingv1.HTTPRoute) bool {
	return strings.HasPrefix(r.GetName(), providers.ABRuleNamePrefix)
}

// hasABRoutes reports whether any route is an A/B route.
func hasABRoutes(routes []*networkingv1.HTTPRoute) bool {
	return slices.ContainsFunc(routes, isABRoute)
}

// withoutABRoutes returns the routes that are not A/B routes, in order.
func withoutABRoutes(routes []*networkingv1.HTTPRoute) []*networkingv1.HTTPRoute {
	out := make([]*networkingv1.HTTPRoute, 0, len(routes))
	for _, r := range routes {
		if !isABRoute(r) {
			out = append(out, r)
		}
	}
	return out
}

// abMatches converts spec.analysis.match; nil when the Canary has none, which means no A/B routes.
// errors: ErrInvalidSpec.
func abMatches(canary *sluicev1.Canary) ([]*networkingv1.HTTPMatchRequest, error) {
	return convertMatchField("spec.analysis.match", canary.Spec.Analysis.Match)
}

// withABRoutes inserts an A/B route directly before every route (none of them an A/B route)
// whose destinations name the Canary's services. The A/B route copying spec.http[i] is named
// providers.ABRuleNamePrefix + i and is that route with:
//   - match: each of the route's match requests combined with each A/B match (see
//     intersectMatches); a route without match requests matches every request, so it gets the A/B
//     matches as they are;
//   - route: the route's destinations split as SetRoutes does at primary 0, canary 100.
//
// Everything else (retries, timeout, rewrite, headers, fault, mirror, CORS) is copied; a route
// that rewrites its URI (rewrite.uri replaces the prefix its match matched) keeps its URI matches
// in the A/B route, so an A/B match narrowing them is an error. Istio
// evaluates HTTP routes in order and the first match wins: the A/B route sits directly before
// the route it narrows, so requests matching both go to the canary and every earlier route keeps
// the requests it matched. A route none of whose combinations can match a request gets no A/B
// route. With no A/B matches, routes are returned as they are.
// errors: ErrUnsupportedRoute from the split, ErrInvalidSpec from intersectMatches, naming the route.
func (s scope) withABRoutes(routes []*networkingv1.HTTPRoute, ab []*networkingv1.HTTPMatchRequest) ([]*networkingv1.HTTPRoute, error) {
	return s.insertCopies(routes, ab, providers.ABRuleNamePrefix)
}

// insertCopies inserts before every managed route (not itself a copy) a copy named prefix + index
// whose match is the route's combined with ab and whose destinations send everything to the
// canary, as withABRoutes describes; routes are returned as they are when ab is empty.
func (s scope) insertCopies(routes []*networkingv1.HTTPRoute, ab []*networkingv1.HTTPMatchRequest, prefix string) ([]*networkingv1.HTTPRoute, error) {
	if len(ab) == 0 {
		return routes, nil
	}
	out := make([]*networkingv1.HTTPRoute, 0, 2*len(routes))
	for i, r := range routes {
		if isCopyRoute(r) {
			out = append(out, r)
			continue
		}
		dests, managed, err := s.splitRoute(r.GetRoute(), providers.CanaryWeight(providers.TotalWeight))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", routeName(i, r), err)
		}
		if managed {
			match, err := intersectMatches(r.GetMatch(), ab, r.GetRewrite().GetUri() != "")
			if err != nil {
				return nil, fmt.Errorf("%s: %w", routeName(i, r), err)
			}
			if len(match) > 0 {
				c := proto.CloneOf(r)
				c.Name = fmt.Sprintf("%s%d", prefix, i)
				c.Match = match
				c.Route = dests
				out = append(out, c)
			}
		}
		out = append(out, r)
	}
	return out, nil
}

// intersectMatches returns the match requests of the A/B route of a route with match requests
// route: each of route's combined (AND) with each A/B match, in that order, without duplicates
// and without combinations no request can satisfy. No route match requests means every request:
// the A/B matches are returned as they are. With keepURI every combination must keep the URI
// match of the route's match request. errors: ErrInvalidSpec from combineMatch, or for a URI
// that keepURI forbids.
func intersectMatches(route, ab []*networkingv1.HTTPMatchRequest, keepURI bool) ([]*networkingv1.HTTPMatchRequest, error) {
	if len(route) == 0 && keepURI {
		route = []*networkingv1.HTTPMatchRequest{{}}
	}
	if len(route) == 0 {
		out := make([]*networkingv1.HTTPMatchRequest, len(ab))
		for i, a := range ab {
			out[i] = proto.CloneOf(a)
		}
		return out, nil
	}
	var out []*networkingv1.HTTPMatchRequest
	for i, r := range route {
		for j, a := range ab {
			m, ok, err := combineMatch(r, a)
			if err != nil {
				return nil, fmt.Errorf("match[%d] with A/B match[%d]: %w", i, j, err)
			}
			if ok && keepURI && !proto.Equal(m.GetUri(), r.GetUri()) {
				return nil, fmt.Errorf("%w: match[%d] with A/B match[%d]: the route rewrites its matched URI prefix (rewrite.uri), so its A/B route must match the same URI, not %v",
					ErrInvalidSpec, i, j, m.GetUri())
			}
			if ok && !slices.ContainsFunc(out, func(x *networkingv1.HTTPMatchRequest) bool { return proto.Equal(x, m) }) {
				out = append(out, m)
			}
		}
	}
	return out, nil
}

// combineMatch returns one match request for requests matching both r and a, and false when no
// request can: the narrower of the two URIs and methods (see intersectString), r's headers and
// query parameters plus a's on names r does not match (see mergeStringMatches), and every other
// field (authority, port, gateways, source labels, withoutHeaders, name) from r.
// errors: ErrInvalidSpec for two conditions on one URI, method, header or query parameter that
// one match request cannot hold together (regular expressions, a URI match of r that ignores
// case).
func combineMatch(r, a *networkingv1.HTTPMatchRequest) (*networkingv1.HTTPMatchRequest, bool, error) {
	out := proto.CloneOf(r)
	if a.GetUri() != nil {
		if r.GetIgnoreUriCase() && r.GetUri() != nil {
			return nil, false, fmt.Errorf("%w: uri: the route matches %v ignoring case and the A/B match %v; one match request cannot require both",
				ErrInvalidSpec, r.GetUri(), a.GetUri())
		}
		if r.GetUri() == nil {
			out.IgnoreUriCase = false
		}
		uri, ok, err := intersectString("uri", r.GetUri(), a.GetUri(), true)
		if err != nil || !ok {
			return nil, false, err
		}
		out.Uri = uri
	}
	if a.GetMethod() != nil {
		method, ok, err := intersectString("method", r.GetMethod(), a.GetMethod(), false)
		if err != nil || !ok {
			return nil, false, err
		}
		out.Method = method
	}
	var ok bool
	var err error
	if out.Headers, ok, err = mergeStringMatches("header", out.GetHeaders(), a.GetHeaders(), strings.EqualFold); err != nil || !ok {
		return nil, false, err
	}
	sameName := func(x, y string) bool { return x == y }
	if out.QueryParams, ok, err = mergeStringMatches("query parameter", out.GetQueryParams(), a.GetQueryParams(), sameName); err != nil || !ok {
		return nil, false, err
	}
	return out, true, nil
}

// intersectString returns a match for strings matching both r (nil: anything) and a, and false
// when none can: of two prefixes, or a prefix and an exact value, the narrower when one lies
// within the other (with prefixes, for URIs; Istio's prefixes are plain string prefixes); two
// different exact values match nothing.
// errors: ErrInvalidSpec for a regular expression against a different match.
func intersectString(field string, r, a *networkingv1.StringMatch, prefixes bool) (*networkingv1.StringMatch, bool, error) {
	switch {
	case r == nil:
		return proto.CloneOf(a), true, nil
	case proto.Equal(r, a):
		return proto.CloneOf(r), true, nil
	case r.GetExact() != "" && a.GetExact() != "":
		return nil, false, nil
	}
	rp, ap := r.GetPrefix(), a.GetPrefix()
	if prefixes && r.GetRegex() == "" && a.GetRegex() == "" {
		rv, av := rp+r.GetExact(), ap+a.GetExact() // exactly one of each pair is set
		switch {
		case ap != "" && strings.HasPrefix(rv, ap):
			return proto.CloneOf(r), true, nil // r is an exact value or a prefix within a's prefix
		case rp != "" && strings.HasPrefix(av, rp):
			return proto.CloneOf(a), true, nil // a is an exact value or a prefix within r's prefix
		}
		return nil, false, nil
	}
	return nil, false, fmt.Errorf("%w: %s: the route matches %v and the A/B match %v; one match request cannot require both",
		ErrInvalidSpec, field, r, a)
}

// mergeStringMatches returns have plus every condition of add on a name have does not match
// (names compared with sameName: case-insensitive for headers). A condition on a name have
// matches is dropped when it is the same, and makes the combination unsatisfiable (false) when
// both are different exact values. have is modified.
// errors: ErrInvalidSpec for any other pair: a map holds one condition per name.
func mergeStringMatches(kind string, have, add map[string]*networkingv1.StringMatch, sameName func(a, b string) bool) (map[string]*networkingv1.StringMatch, bool, error) {
	for _, name := range slices.Sorted(maps.Keys(add)) {
		x := add[name]
		found := ""
		for _, k := range slices.Sorted(maps.Keys(have)) {
			if sameName(k, name) {
				found = k
				break
			}
		}
		if found == "" {
			if have == nil {
				have = map[string]*networkingv1.StringMatch{}
			}
			have[name] = proto.CloneOf(x)
			continue
		}
		y := have[found]
		switch {
		case proto.Equal(x, y):
		case x.GetExact() != "" && y.GetExact() != "":
			return nil, false, nil
		default:
			return nil, false, fmt.Errorf("%w: %s %s: the route matches %v and the A/B match %v; one match request cannot require both",
				ErrInvalidSpec, kind, name, y, x)
		}
	}
	return have, true, nil
}
