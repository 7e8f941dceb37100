package istio

import (
	"context"
	"fmt"

	networkingv1 "istio.io/api/networking/v1"
	istionetv1 "istio.io/client-go/pkg/apis/networking/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/providers"
)

// SetMirror sets on every managed route a mirror to its canary destination with
// mirrorPercentage percent (1–100), or removes it (0); nothing else changes, and nothing is
// written when the VirtualService is already so. errors: ErrRouteNotFound, ErrNoApexRoute,
// ErrUnsupportedRoute, ErrInvalidSpec (a route that already mirrors elsewhere), a percent outside
// 0–100, API errors (Conflict: retry).
func (r *Router) SetMirror(ctx context.Context, canary *sluicev1.Canary, percent int32) error {
	if percent < 0 || percent > providers.TotalWeight {
		return fmt.Errorf("mirror percentage %d outside 0..%d", percent, providers.TotalWeight)
	}
	return r.setExtras(ctx, canary, func(e *extras) { e.mirror = percent })
}

// GetMirror reads the mirrored percentage of the managed routes (0: none).
// errors: ErrRouteNotFound, API errors.
func (r *Router) GetMirror(ctx context.Context, canary *sluicev1.Canary) (int32, error) {
	vs, err := r.routeOf(ctx, canary)
	if err != nil {
		return 0, err
	}
	return scopeOf(canary).extrasOf(vs.Spec.GetHttp()).mirror, nil
}

// SetSessionAffinity turns session affinity on for cookie ("name=value", see
// providers.AffinityCookie; Max-Age from spec.analysis.sessionAffinity) or off (""): the canary
// destinations hand out the cookie and a session-affinity route before every managed route sends
// the requests carrying it to the canary (see withExtras). errors: as SetMirror.
func (r *Router) SetSessionAffinity(ctx context.Context, canary *sluicev1.Canary, cookie string) error {
	setCookie := ""
	if cookie != "" {
		maxAge := int32(86400)
		if a := canary.Spec.Analysis.SessionAffinity; a != nil && a.MaxAge > 0 {
			maxAge = a.MaxAge
		}
		setCookie = providers.SetCookie(cookie, maxAge)
	}
	return r.setExtras(ctx, canary, func(e *extras) { e.cookie, e.setCookie = cookie, setCookie })
}

// GetSessionAffinity reads the session-affinity cookie ("": none). errors: as GetMirror.
func (r *Router) GetSessionAffinity(ctx context.Context, canary *sluicev1.Canary) (string, error) {
	vs, err := r.routeOf(ctx, canary)
	if err != nil {
		return "", err
	}
	return scopeOf(canary).extrasOf(vs.Spec.GetHttp()).cookie, nil
}

// routeOf reads the VirtualService the Canary routes with (generated or referenced).
func (r *Router) routeOf(ctx context.Context, canary *sluicev1.Canary) (*istionetv1.VirtualService, error) {
	ref, err := referenced(canary)
	if err != nil {
		return nil, err
	}
	return r.getVirtualService(ctx, canary, virtualServiceName(canary, ref))
}

// setExtras rewrites the VirtualService with its extras changed by change, keeping weights and
// A/B routes.
func (r *Router) setExtras(ctx context.Context, canary *sluicev1.Canary, change func(*extras)) error {
	ref, err := referenced(canary)
	if err != nil {
		return err
	}
	if !ref {
		n := canary.ServiceNames()
		vs := &istionetv1.VirtualService{}
		ok, err := r.getControlled(ctx, canary, n.Apex, vs)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: VirtualService %s/%s (Reconcile creates it)", providers.ErrRouteNotFound, canary.Namespace, n.Apex)
		}
		e := scopeOf(canary).extrasOf(vs.Spec.GetHttp())
		change(&e)
		return r.ensureVirtualService(ctx, canary, vs, currentWeights(vs, canary), hasABRoutes(vs.Spec.GetHttp()), e)
	}
	vs, err := r.getVirtualService(ctx, canary, canary.Spec.Service.RouteRef.Name)
	if err != nil {
		return err
	}
	var ab []*networkingv1.HTTPMatchRequest
	if hasABRoutes(vs.Spec.GetHttp()) {
		if ab, err = abMatches(canary); err != nil {
			return err
		}
	}
	e := scopeOf(canary).extrasOf(vs.Spec.GetHttp())
	change(&e)
	http, err := referencedHTTP(vs, canary, nil, ab, e)
	if err != nil {
		return err
	}
	return r.writeReferenced(ctx, vs, http)
}
