package gatewayapi

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/providers"
)

// SetMirror adds to every managed rule a RequestMirror filter copying percent (1–100) of its
// requests to the canary Service, or removes it (0); nothing else changes, and nothing is written
// when the route is already so. errors: ErrRouteNotFound, ErrNoApexBackend, ErrRouteConflict,
// ErrInvalidSpec (wrapped), a percent outside 0–100, API errors.
func (r *Router) SetMirror(ctx context.Context, canary *sluicev1.Canary, percent int32) error {
	if percent < 0 || percent > providers.TotalWeight {
		return fmt.Errorf("mirror percentage %d outside 0..%d", percent, providers.TotalWeight)
	}
	return r.setExtras(ctx, canary, "mirroring", func(e *extras) { e.mirror = percent })
}

// GetMirror reads the mirrored percentage of the managed rules (0: none).
// errors: ErrRouteNotFound, API errors.
func (r *Router) GetMirror(ctx context.Context, canary *sluicev1.Canary) (int32, error) {
	e, err := r.getExtras(ctx, canary)
	return e.mirror, err
}

// SetSessionAffinity turns session affinity on for cookie ("name=value", see
// providers.AffinityCookie; the Set-Cookie attributes come from spec.analysis.sessionAffinity) or
// off (""): the canary's responses hand out the cookie, and a session-affinity rule before every
// managed rule sends the requests carrying it to the canary (see withExtras). Nothing is written
// when the route is already so. errors: as SetMirror.
func (r *Router) SetSessionAffinity(ctx context.Context, canary *sluicev1.Canary, cookie string) error {
	setCookie := ""
	if cookie != "" {
		maxAge := int32(86400)
		if a := canary.Spec.Analysis.SessionAffinity; a != nil && a.MaxAge > 0 {
			maxAge = a.MaxAge
		}
		setCookie = providers.SetCookie(cookie, maxAge)
	}
	return r.setExtras(ctx, canary, "session affinity", func(e *extras) { e.cookie, e.setCookie = cookie, setCookie })
}

// GetSessionAffinity reads the session-affinity cookie of the route ("": none).
// errors: ErrRouteNotFound, API errors.
func (r *Router) GetSessionAffinity(ctx context.Context, canary *sluicev1.Canary) (string, error) {
	e, err := r.getExtras(ctx, canary)
	return e.cookie, err
}

func (r *Router) getExtras(ctx context.Context, canary *sluicev1.Canary) (extras, error) {
	ref, err := routeRef(canary)
	if err != nil {
		return extras{}, err
	}
	route, err := r.getRoute(ctx, routeKey(canary, ref))
	if err != nil {
		return extras{}, err
	}
	return servicesOf(canary).extrasOf(route.Spec.Rules), nil
}

// setExtras rewrites the route with its extras changed by change, keeping weights and A/B rules.
func (r *Router) setExtras(ctx context.Context, canary *sluicev1.Canary, what string, change func(*extras)) error {
	ref, err := routeRef(canary)
	if err != nil {
		return err
	}
	s := servicesOf(canary)
	if ref == nil {
		route, err := r.generatedRoute(ctx, canary)
		if err != nil {
			return err
		}
		e := s.extrasOf(route.Spec.Rules)
		change(&e)
		return r.applyGenerated(ctx, canary, route, currentWeights(route, s), hasABRules(route.Spec.Rules), e,
			"Setting HTTPRoute "+what)
	}
	route, s, err := r.referencedRoute(ctx, canary, ref)
	if err != nil {
		return err
	}
	e := s.extrasOf(route.Spec.Rules)
	change(&e)
	var ab []gwv1.HTTPRouteMatch
	if hasABRules(route.Spec.Rules) {
		if ab, err = abMatches(canary); err != nil {
			return err
		}
	}
	rules, err := s.desiredRules(route.Spec.Rules, nil, ab, e)
	if err != nil {
		return fmt.Errorf("HTTPRoute %s: %w", client.ObjectKeyFromObject(route), err)
	}
	return r.writeReference(ctx, route, s, rules, "Setting HTTPRoute "+what)
}
