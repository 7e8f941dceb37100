package gatewayapi

import (
	"fmt"

	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// rewriteFilter converts spec.service.rewrite into a URLRewrite filter (nil for none): the URI
// replaces the whole path (ReplaceFullPath, the default) or the matched prefix
// (ReplacePrefixMatch), the authority replaces the Host header. errors: ErrInvalidSpec (wrapped)
// for ReplacePrefixMatch on a rule whose matches are not exactly one path prefix, which the
// HTTPRoute schema refuses.
func rewriteFilter(rw *sluicev1.HTTPRewrite, matches []gwv1.HTTPRouteMatch) (*gwv1.HTTPRouteFilter, error) {
	if rw == nil || (rw.URI == "" && rw.Authority == "") {
		return nil, nil
	}
	f := &gwv1.HTTPURLRewriteFilter{}
	if rw.Authority != "" {
		f.Hostname = ptr.To(gwv1.PreciseHostname(rw.Authority))
	}
	if rw.URI != "" {
		switch rw.Type {
		case sluicev1.RewriteReplacePrefixMatch:
			if t, _ := pathOf(onlyPath(matches)); len(matches) != 1 || t != gwv1.PathMatchPathPrefix {
				return nil, fmt.Errorf("%w: spec.service.rewrite.type ReplacePrefixMatch needs exactly one prefix match in spec.service.match (or none)",
					ErrInvalidSpec)
			}
			f.Path = &gwv1.HTTPPathModifier{Type: gwv1.PrefixMatchHTTPPathModifier, ReplacePrefixMatch: ptr.To(rw.URI)}
		default:
			f.Path = &gwv1.HTTPPathModifier{Type: gwv1.FullPathHTTPPathModifier, ReplaceFullPath: ptr.To(rw.URI)}
		}
	}
	return &gwv1.HTTPRouteFilter{Type: gwv1.HTTPRouteFilterURLRewrite, URLRewrite: f}, nil
}

// onlyPath is the path match of the first match, nil when there is none.
func onlyPath(matches []gwv1.HTTPRouteMatch) *gwv1.HTTPPathMatch {
	if len(matches) == 0 {
		return nil
	}
	return matches[0].Path
}

// timeouts converts spec.service.timeout and backendTimeout (nil when neither is set).
// errors: ErrInvalidSpec (wrapped) from gatewayDuration.
func timeouts(request, backend string) (*gwv1.HTTPRouteTimeouts, error) {
	if request == "" && backend == "" {
		return nil, nil
	}
	out := &gwv1.HTTPRouteTimeouts{}
	if request != "" {
		d, err := gatewayDuration(request)
		if err != nil {
			return nil, err
		}
		out.Request = &d
	}
	if backend != "" {
		d, err := gatewayDuration(backend)
		if err != nil {
			return nil, fmt.Errorf("backendTimeout: %w", err)
		}
		out.BackendRequest = &d
	}
	return out, nil
}
