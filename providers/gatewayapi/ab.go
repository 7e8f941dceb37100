package gatewayapi

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/providers"
)

// Size limits of an HTTPRoute in the Gateway API v1.6 standard-channel schema, checked before A/B
// rules are written so that a route too big to hold them fails with a message saying so.
const (
	maxRules           = 16
	maxMatchesPerRule  = 64
	maxMatchesPerRoute = 128
)

// isABRule reports whether rule is an A/B rule Sluice wrote (named providers.ABRuleNamePrefix…).
func isABRule(rule gwv1.HTTPRouteRule) bool {
	return rule.Name != nil && strings.HasPrefix(string(*rule.Name), providers.ABRuleNamePrefix)
}

// hasABRules reports whether any rule is an A/B rule.
func hasABRules(rules []gwv1.HTTPRouteRule) bool {
	return slices.ContainsFunc(rules, isABRule)
}

// withoutABRules returns the rules that are not A/B rules, in order.
func withoutABRules(rules []gwv1.HTTPRouteRule) []gwv1.HTTPRouteRule {
	out := make([]gwv1.HTTPRouteRule, 0, len(rules))
	for _, rule := range rules {
		if !isABRule(rule) {
			out = append(out, rule)
		}
	}
	return out
}

// abMatches converts spec.analysis.match (see convertMatches); nil when the Canary has none, which
// means no A/B rules. errors: ErrInvalidSpec (wrapped).
func abMatches(canary *sluicev1.Canary) ([]gwv1.HTTPRouteMatch, error) {
	if len(canary.Spec.Analysis.Match) == 0 {
		return nil, nil
	}
	out, err := convertMatches(canary.Spec.Analysis.Match)
	if err != nil {
		return nil, fmt.Errorf("spec.analysis.%w", err)
	}
	return out, nil
}

// desiredRules returns rules without their A/B rules and extras, with every primary/canary pair
// set to w (nil: left as it is; see splitRules), with A/B rules for ab when it is not empty (see
// withABRules), and with extras e (see withExtras). errors: those of splitRules, withABRules and
// withExtras.
func (s services) desiredRules(rules []gwv1.HTTPRouteRule, w *providers.Weights, ab []gwv1.HTTPRouteMatch, e extras) ([]gwv1.HTTPRouteRule, error) {
	out := withoutABRules(s.withoutExtras(rules))
	if w != nil {
		var err error
		if out, err = s.splitRules(out, *w); err != nil {
			return nil, err
		}
	}
	out, err := s.withABRules(out, ab)
	if err != nil {
		return nil, err
	}
	return s.withExtras(out, e)
}

// withABRules inserts an A/B rule directly before every rule (none of them an A/B rule) that sends
// traffic to the apex, primary or canary Service. The A/B rule copying rule i is named
// providers.ABRuleNamePrefix + i and is that rule with:
//   - matches: each of the rule's matches combined with each A/B match (see intersectMatches); a
//     rule without matches matches every request, so it gets the A/B matches as they are;
//   - backendRefs: the rule's, split as splitRule does at primary 0, canary 100: every apex
//     backendRef or primary/canary pair sends its share to the canary; another backend in the
//     same rule keeps its share.
//
// Everything else (filters, timeouts, session persistence) is copied. A rule none of whose
// combinations can match a request (say, the rule matches /static and the A/B match /api) gets no
// A/B rule.
//
// A rule with a ReplacePrefixMatch path modifier (URLRewrite or RequestRedirect, on the rule or a
// backendRef) rewrites the prefix its match matched, and the schema allows it exactly one
// PathPrefix match: its A/B rules keep the rule's path (an A/B match narrowing it is an error,
// since the rewrite would change) and there is one per combined match, named
// providers.ABRuleNamePrefix + i + "-" + k when there are several.
//
// Precedence: Gateway API ranks matches across the rules of a route by exact path, then longest
// prefix, then method, then the number of header and of query parameter matches, and gives ties
// to the rule listed first. Each combined match has the rule's path or a narrower one (exact, or
// a longer prefix), the rule's method, and at least the rule's headers and query parameters: it
// ranks at least as high as the match it narrows, and a tie goes to the A/B rule because it is
// listed directly before. So every request matching both goes to the canary. A request matching
// a third rule that outranks the rule's own match but ranks no higher than the combined match
// (for example, same path and one header of its own, listed after the rule) may be taken by the
// A/B rule; a tie with a rule listed before the copied rule still goes to that rule.
//
// errors: ErrInvalidSpec (wrapped) when a match cannot be combined (see intersectMatches) or the
// route would exceed the schema's 16 rules, 64 matches per rule or 128 matches per route.
func (s services) withABRules(rules []gwv1.HTTPRouteRule, ab []gwv1.HTTPRouteMatch) ([]gwv1.HTTPRouteRule, error) {
	return s.insertCopies(rules, ab, providers.ABRuleNamePrefix)
}

// insertCopies inserts before every rule that sends traffic to the Canary's Services (and is not
// itself a copy) a copy named prefix + index whose matches are the rule's combined with ab and
// whose Canary backends send everything to the canary, as withABRules describes; rules are
// returned as they are when ab is empty.
func (s services) insertCopies(rules []gwv1.HTTPRouteRule, ab []gwv1.HTTPRouteMatch, prefix string) ([]gwv1.HTTPRouteRule, error) {
	if len(ab) == 0 {
		return rules, nil
	}
	out := make([]gwv1.HTTPRouteRule, 0, 2*len(rules))
	for i, rule := range rules {
		if s.manages(rule.BackendRefs) && !isCopyRule(rule) {
			matches, err := intersectMatches(rule.Matches, ab)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", ruleName(i, rule), err)
			}
			groups, err := abMatchGroups(rule, matches)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", ruleName(i, rule), err)
			}
			for k, group := range groups {
				abRule, err := s.splitRule(rule, providers.CanaryWeight(providers.TotalWeight))
				if err != nil {
					return nil, fmt.Errorf("%s: %w", ruleName(i, rule), err)
				}
				name := fmt.Sprintf("%s%d", prefix, i)
				if len(groups) > 1 {
					name += fmt.Sprintf("-%d", k)
				}
				abRule.Name = ptr.To(gwv1.SectionName(name))
				abRule.Matches = group
				out = append(out, abRule)
			}
		}
		out = append(out, rule)
	}
	return out, checkRouteSize(out)
}

// abMatchGroups returns the match lists of the A/B rules of rule: all combined matches in one
// rule, or, for a rule that replaces its matched prefix (see replacesPrefix), one rule per
// combined match, each with the rule's own path. errors: ErrInvalidSpec (wrapped) when a combined
// match of such a rule has another path.
func abMatchGroups(rule gwv1.HTTPRouteRule, matches []gwv1.HTTPRouteMatch) ([][]gwv1.HTTPRouteMatch, error) {
	if len(matches) == 0 {
		return nil, nil
	}
	if !replacesPrefix(rule) || len(rule.Matches) != 1 {
		return [][]gwv1.HTTPRouteMatch{matches}, nil
	}
	groups := make([][]gwv1.HTTPRouteMatch, 0, len(matches))
	for _, m := range matches {
		if !equality.Semantic.DeepEqual(m.Path, rule.Matches[0].Path) {
			t, v := pathOf(m.Path)
			return nil, fmt.Errorf("%w: the rule rewrites its matched path prefix (ReplacePrefixMatch), so its A/B rule must match the same path, not %s %q",
				ErrInvalidSpec, t, v)
		}
		groups = append(groups, []gwv1.HTTPRouteMatch{m})
	}
	return groups, nil
}

// replacesPrefix reports whether rule or one of its backendRefs has a URLRewrite or
// RequestRedirect filter with a ReplacePrefixMatch path modifier.
func replacesPrefix(rule gwv1.HTTPRouteRule) bool {
	replaces := func(filters []gwv1.HTTPRouteFilter) bool {
		return slices.ContainsFunc(filters, func(f gwv1.HTTPRouteFilter) bool {
			var p *gwv1.HTTPPathModifier
			switch {
			case f.URLRewrite != nil:
				p = f.URLRewrite.Path
			case f.RequestRedirect != nil:
				p = f.RequestRedirect.Path
			}
			return p != nil && p.Type == gwv1.PrefixMatchHTTPPathModifier
		})
	}
	return replaces(rule.Filters) || slices.ContainsFunc(rule.BackendRefs, func(b gwv1.HTTPBackendRef) bool { return replaces(b.Filters) })
}

// checkRouteSize reports rules the HTTPRoute schema would refuse for their number or their matches.
func checkRouteSize(rules []gwv1.HTTPRouteRule) error {
	if len(rules) > maxRules {
		return fmt.Errorf("%w: with A/B rules the HTTPRoute would have %d rules; it holds at most %d",
			ErrInvalidSpec, len(rules), maxRules)
	}
	total := 0
	for i, rule := range rules {
		if n := len(rule.Matches); n > maxMatchesPerRule {
			return fmt.Errorf("%w: %s would have %d matches; a rule holds at most %d",
				ErrInvalidSpec, ruleName(i, rule), n, maxMatchesPerRule)
		}
		total += len(rule.Matches)
	}
	if total > maxMatchesPerRoute {
		return fmt.Errorf("%w: with A/B rules the HTTPRoute would have %d matches; it holds at most %d",
			ErrInvalidSpec, total, maxMatchesPerRoute)
	}
	return nil
}

// intersectMatches returns the matches of the A/B rule of a rule with matches rule: each of
// rule's matches combined (AND) with each A/B match, in that order, without duplicates and
// without combinations no request can satisfy. No rule matches means every request: the A/B
// matches are returned as they are.
// errors: ErrInvalidSpec (wrapped) from combineMatch.
func intersectMatches(rule, ab []gwv1.HTTPRouteMatch) ([]gwv1.HTTPRouteMatch, error) {
	if len(rule) == 0 {
		out := make([]gwv1.HTTPRouteMatch, len(ab))
		for i := range ab {
			out[i] = *ab[i].DeepCopy()
		}
		return out, nil
	}
	var out []gwv1.HTTPRouteMatch
	for i := range rule {
		for j := range ab {
			m, ok, err := combineMatch(rule[i], ab[j])
			if err != nil {
				return nil, fmt.Errorf("match[%d] with A/B match[%d]: %w", i, j, err)
			}
			if ok && !slices.ContainsFunc(out, func(x gwv1.HTTPRouteMatch) bool { return equality.Semantic.DeepEqual(x, m) }) {
				out = append(out, m)
			}
		}
	}
	return out, nil
}

// combineMatch returns one match for requests matching both r and a, and false when no request
// can: the narrower of the two paths (see intersectPath), the method either sets (false when both
// set different ones), and r's header and query parameter matches followed by a's that r does not
// already hold (see mergeConditions). Other fields are r's.
// errors: ErrInvalidSpec (wrapped) for two conditions on one path, header or query parameter that
// an HTTPRouteMatch cannot hold together (regular expressions, a prefix against a regex).
func combineMatch(r, a gwv1.HTTPRouteMatch) (gwv1.HTTPRouteMatch, bool, error) {
	out, add := *r.DeepCopy(), *a.DeepCopy()
	path, ok, err := intersectPath(out.Path, add.Path)
	if err != nil || !ok {
		return out, false, err
	}
	out.Path = path
	if add.Method != nil {
		if out.Method != nil && *out.Method != *add.Method {
			return out, false, nil
		}
		out.Method = add.Method
	}
	headerKey := func(h gwv1.HTTPHeaderMatch) condition {
		return condition{string(h.Name), string(ptr.Deref(h.Type, gwv1.HeaderMatchExact)), h.Value}
	}
	if out.Headers, ok, err = mergeConditions("header", out.Headers, add.Headers, headerKey, strings.EqualFold); err != nil || !ok {
		return out, false, err
	}
	queryKey := func(q gwv1.HTTPQueryParamMatch) condition {
		return condition{string(q.Name), string(ptr.Deref(q.Type, gwv1.QueryParamMatchExact)), q.Value}
	}
	sameName := func(x, y string) bool { return x == y }
	if out.QueryParams, ok, err = mergeConditions("query parameter", out.QueryParams, add.QueryParams, queryKey, sameName); err != nil || !ok {
		return out, false, err
	}
	return out, true, nil
}

// condition is a header or query parameter match: name, match type and value.
type condition struct{ name, typ, value string }

// mergeConditions returns have followed by each condition of add on a name have does not hold
// (names compared with sameName: case-insensitive for headers, as Gateway API compares them).
// A condition on a name have holds is dropped when it is the same, and makes the combination
// unsatisfiable (false) when both are Exact with different values.
// errors: ErrInvalidSpec (wrapped) for any other pair: an HTTPRouteMatch considers only the first
// condition on a name, so two cannot be required together.
func mergeConditions[T any](kind string, have, add []T, key func(T) condition, sameName func(a, b string) bool) ([]T, bool, error) {
	out := have
	for _, x := range add {
		kx := key(x)
		j := slices.IndexFunc(out, func(y T) bool { return sameName(key(y).name, kx.name) })
		if j < 0 {
			out = append(out, x)
			continue
		}
		ky := key(out[j])
		exact := string(gwv1.HeaderMatchExact) // the same string for query parameters
		switch {
		case ky.typ == kx.typ && ky.value == kx.value:
		case ky.typ == exact && kx.typ == exact:
			return nil, false, nil
		default:
			return nil, false, fmt.Errorf("%w: %s %s: the rule matches %s %q and the A/B match %s %q; one HTTPRouteMatch cannot require both",
				ErrInvalidSpec, kind, kx.name, ky.typ, ky.value, kx.typ, kx.value)
		}
	}
	return out, true, nil
}

// intersectPath returns the path match of requests matching both r and a (nil meaning PathPrefix
// "/"), and false when no path matches both: PathPrefix "/" leaves the other; of a prefix and a
// path under it (Gateway API prefixes match whole path segments: /api covers /api and /api/v1, not
// /apiv1) the narrower one; two different exact paths, or a path outside the other prefix, match
// nothing. errors: ErrInvalidSpec (wrapped) for a RegularExpression path against a different
// path, whose intersection no single path match expresses.
func intersectPath(r, a *gwv1.HTTPPathMatch) (*gwv1.HTTPPathMatch, bool, error) {
	rt, rv := pathOf(r)
	at, av := pathOf(a)
	switch {
	case at == gwv1.PathMatchPathPrefix && av == "/":
		return r, true, nil
	case rt == gwv1.PathMatchPathPrefix && rv == "/":
		return a, true, nil
	case rt == at && rv == av:
		return r, true, nil
	case rt == gwv1.PathMatchRegularExpression || at == gwv1.PathMatchRegularExpression:
		return nil, false, fmt.Errorf("%w: path: the rule matches %s %q and the A/B match %s %q; no single path match requires both",
			ErrInvalidSpec, rt, rv, at, av)
	case at == gwv1.PathMatchPathPrefix && underPrefix(rv, av):
		return r, true, nil // r is an exact path or a prefix under a's prefix
	case rt == gwv1.PathMatchPathPrefix && underPrefix(av, rv):
		return a, true, nil // a is an exact path or a prefix under r's prefix
	}
	return nil, false, nil
}

// pathOf returns a path match's type and value with the schema's defaults (PathPrefix, "/").
func pathOf(p *gwv1.HTTPPathMatch) (gwv1.PathMatchType, string) {
	if p == nil {
		return gwv1.PathMatchPathPrefix, "/"
	}
	return ptr.Deref(p.Type, gwv1.PathMatchPathPrefix), ptr.Deref(p.Value, "/")
}

// underPrefix reports whether PathPrefix prefix matches every request path that path (an exact
// path or a prefix) matches: prefix is path's whole leading segments (a trailing slash ignored).
func underPrefix(path, prefix string) bool {
	prefix = strings.TrimSuffix(prefix, "/")
	return prefix == "" || path == prefix || strings.HasPrefix(path, prefix+"/")
}
