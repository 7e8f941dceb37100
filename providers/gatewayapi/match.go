package gatewayapi

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/providers"
)

// ErrInvalidSpec means the Canary's service spec cannot be expressed as an HTTPRoute (an
// unsupported match, a timeout the Gateway API duration format cannot hold, an unsupported
// routeRef). Retrying does not help; the Canary must change.
var ErrInvalidSpec error = providers.Permanent(sluicev1.ReasonInvalidSpec, "canary service spec not supported by the gatewayapi provider")

// httpMethods are the methods an HTTPRouteMatch accepts.
var httpMethods = []gwv1.HTTPMethod{
	gwv1.HTTPMethodGet, gwv1.HTTPMethodHead, gwv1.HTTPMethodPost, gwv1.HTTPMethodPut, gwv1.HTTPMethodDelete,
	gwv1.HTTPMethodConnect, gwv1.HTTPMethodOptions, gwv1.HTTPMethodTrace, gwv1.HTTPMethodPatch,
}

// convertMatches converts spec.service.match (Istio's shape) into HTTPRouteMatches, with every
// field the API server would default spelled out (path PathPrefix "/" when no URI is given, header
// and query matches of type Exact). No matches means one match on every request. Headers and query
// parameters are sorted by name. Conversions:
//   - uri: exact → Exact, prefix → PathPrefix (Gateway API matches whole path segments: /api matches
//     /api/v1 but not /apiv1), regex → RegularExpression;
//   - headers, queryParams: exact → Exact, regex → RegularExpression, prefix → RegularExpression
//     "^<quoted prefix>.*";
//   - method: exact only, one of GET HEAD POST PUT DELETE CONNECT OPTIONS TRACE PATCH.
//
// errors: ErrInvalidSpec (wrapped) for a method that is not an exact known method, or a StringMatch
// with none of exact, prefix, regex set.
func convertMatches(in []sluicev1.HTTPMatchRequest) ([]gwv1.HTTPRouteMatch, error) {
	if len(in) == 0 {
		return []gwv1.HTTPRouteMatch{{Path: defaultPath()}}, nil
	}
	out := make([]gwv1.HTTPRouteMatch, 0, len(in))
	for i, m := range in {
		match, err := convertMatch(m)
		if err != nil {
			return nil, fmt.Errorf("%w: match[%d]: %w", ErrInvalidSpec, i, err)
		}
		out = append(out, match)
	}
	return out, nil
}

func convertMatch(m sluicev1.HTTPMatchRequest) (gwv1.HTTPRouteMatch, error) {
	out := gwv1.HTTPRouteMatch{Path: defaultPath()}
	if m.URI != nil {
		p, err := pathMatch(*m.URI)
		if err != nil {
			return out, fmt.Errorf("uri: %w", err)
		}
		out.Path = p
	}
	for _, name := range slices.Sorted(maps.Keys(m.Headers)) {
		typ, value, err := valueMatch(m.Headers[name])
		if err != nil {
			return out, fmt.Errorf("header %s: %w", name, err)
		}
		out.Headers = append(out.Headers, gwv1.HTTPHeaderMatch{
			Type: ptr.To(gwv1.HeaderMatchType(typ)), Name: gwv1.HTTPHeaderName(name), Value: value,
		})
	}
	for _, name := range slices.Sorted(maps.Keys(m.QueryParams)) {
		typ, value, err := valueMatch(m.QueryParams[name])
		if err != nil {
			return out, fmt.Errorf("query parameter %s: %w", name, err)
		}
		out.QueryParams = append(out.QueryParams, gwv1.HTTPQueryParamMatch{
			Type: ptr.To(gwv1.QueryParamMatchType(typ)), Name: gwv1.HTTPHeaderName(name), Value: value,
		})
	}
	if m.Method != nil {
		if m.Method.Exact == nil || !slices.Contains(httpMethods, gwv1.HTTPMethod(*m.Method.Exact)) {
			return out, fmt.Errorf("method: only an exact match on one of %v is supported", httpMethods)
		}
		out.Method = ptr.To(gwv1.HTTPMethod(*m.Method.Exact))
	}
	return out, nil
}

func defaultPath() *gwv1.HTTPPathMatch {
	return &gwv1.HTTPPathMatch{Type: ptr.To(gwv1.PathMatchPathPrefix), Value: ptr.To("/")}
}

func pathMatch(m sluicev1.StringMatch) (*gwv1.HTTPPathMatch, error) {
	switch {
	case m.Exact != nil:
		return &gwv1.HTTPPathMatch{Type: ptr.To(gwv1.PathMatchExact), Value: ptr.To(*m.Exact)}, nil
	case m.Prefix != nil:
		return &gwv1.HTTPPathMatch{Type: ptr.To(gwv1.PathMatchPathPrefix), Value: ptr.To(*m.Prefix)}, nil
	case m.Regex != nil:
		return &gwv1.HTTPPathMatch{Type: ptr.To(gwv1.PathMatchRegularExpression), Value: ptr.To(*m.Regex)}, nil
	}
	return nil, errors.New("set one of exact, prefix or regex")
}

// valueMatch converts a header or query parameter match into a Gateway API match type
// (Exact or RegularExpression, the same strings for headers and query parameters) and value.
func valueMatch(m sluicev1.StringMatch) (typ, value string, err error) {
	switch {
	case m.Exact != nil:
		return string(gwv1.HeaderMatchExact), *m.Exact, nil
	case m.Prefix != nil:
		return string(gwv1.HeaderMatchRegularExpression), "^" + regexp.QuoteMeta(*m.Prefix) + ".*", nil
	case m.Regex != nil:
		return string(gwv1.HeaderMatchRegularExpression), *m.Regex, nil
	}
	return "", "", errors.New("set one of exact, prefix or regex")
}

// headerFilters converts spec.service.headers into RequestHeaderModifier and ResponseHeaderModifier
// filters (in that order; set and add sorted by header name, remove as written). nil when there is
// nothing to do.
func headerFilters(h *sluicev1.HeaderOperations) []gwv1.HTTPRouteFilter {
	if h == nil {
		return nil
	}
	var out []gwv1.HTTPRouteFilter
	if f := headerFilter(h.Request); f != nil {
		out = append(out, gwv1.HTTPRouteFilter{Type: gwv1.HTTPRouteFilterRequestHeaderModifier, RequestHeaderModifier: f})
	}
	if f := headerFilter(h.Response); f != nil {
		out = append(out, gwv1.HTTPRouteFilter{Type: gwv1.HTTPRouteFilterResponseHeaderModifier, ResponseHeaderModifier: f})
	}
	return out
}

func headerFilter(op *sluicev1.HeaderOperation) *gwv1.HTTPHeaderFilter {
	if op == nil || (len(op.Set) == 0 && len(op.Add) == 0 && len(op.Remove) == 0) {
		return nil
	}
	headers := func(m map[string]string) []gwv1.HTTPHeader {
		var out []gwv1.HTTPHeader
		for _, name := range slices.Sorted(maps.Keys(m)) {
			out = append(out, gwv1.HTTPHeader{Name: gwv1.HTTPHeaderName(name), Value: m[name]})
		}
		return out
	}
	f := &gwv1.HTTPHeaderFilter{Set: headers(op.Set), Add: headers(op.Add)}
	if len(op.Remove) > 0 {
		f.Remove = slices.Clone(op.Remove)
	}
	return f
}

// gatewayDuration converts a Go duration string such as "1.5s" or "1m30s" into the Gateway API
// duration format (up to four of h, m, s, ms, each at most five digits): "1s500ms", "1m30s".
// errors: ErrInvalidSpec (wrapped) for an unparsable or negative duration, or one finer than a
// millisecond or longer than the format holds.
func gatewayDuration(s string) (gwv1.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return "", fmt.Errorf("%w: timeout %q is not a non-negative duration", ErrInvalidSpec, s)
	}
	if d%time.Millisecond != 0 {
		return "", fmt.Errorf("%w: timeout %q is finer than a millisecond", ErrInvalidSpec, s)
	}
	if d == 0 {
		return "0s", nil
	}
	var b strings.Builder
	for _, u := range []struct {
		unit   time.Duration
		suffix string
	}{{time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}, {time.Millisecond, "ms"}} {
		n := d / u.unit
		d -= n * u.unit
		if n == 0 {
			continue
		}
		if n > 99999 {
			return "", fmt.Errorf("%w: timeout %q is too long", ErrInvalidSpec, s)
		}
		fmt.Fprintf(&b, "%d%s", n, u.suffix)
	}
	return gwv1.Duration(b.String()), nil
}
