package istio

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	networkingv1 "istio.io/api/networking/v1"
	istionetv1 "istio.io/client-go/pkg/apis/networking/v1"
	istioapplyv1 "istio.io/client-go/pkg/applyconfiguration/networking/v1"
	"k8s.io/utils/ptr"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/providers"
)

// checkReferenced verifies that the referenced VirtualService exists and has at least one route
// Sluice can split. It writes only to converge A/B routes already present (see Router.Reconcile).
// errors: ErrRouteNotFound, ErrNoApexRoute, ErrUnsupportedRoute, ErrInvalidSpec, API errors.
func (r *Router) checkReferenced(ctx context.Context, canary *sluicev1.Canary) error {
	vs, err := r.getVirtualService(ctx, canary, canary.Spec.Service.RouteRef.Name)
	if err != nil {
		return err
	}
	if !hasABRoutes(vs.Spec.GetHttp()) {
		_, err = referencedHTTP(vs, canary, nil, nil, extras{})
		return err
	}
	ab, err := abMatches(canary)
	if err != nil {
		return err
	}
	http, err := referencedHTTP(vs, canary, nil, ab, scopeOf(canary).extrasOf(vs.Spec.GetHttp()))
	if err != nil {
		return err
	}
	return r.writeReferenced(ctx, vs, http)
}

// referencedHTTP returns vs's spec.http without its A/B routes and extras, with the managed routes
// set to w (nil: left as they are), with A/B routes for ab when it is not empty (see
// withABRoutes), and with extras e (see withExtras).
// errors: ErrNoApexRoute, ErrUnsupportedRoute, ErrInvalidSpec.
func referencedHTTP(vs *istionetv1.VirtualService, canary *sluicev1.Canary, w *providers.Weights, ab []*networkingv1.HTTPMatchRequest, e extras) ([]*networkingv1.HTTPRoute, error) {
	s := scopeOf(canary)
	http := withoutABRoutes(s.withoutExtras(vs.Spec.GetHttp()))
	split, managed, err := s.splitHTTP(http, ptr.Deref(w, providers.CanaryWeight(0)))
	if err != nil {
		return nil, fmt.Errorf("VirtualService %s/%s: %w", vs.Namespace, vs.Name, err)
	}
	if managed == 0 {
		return nil, noApexRoute(vs, canary)
	}
	if w != nil {
		http = split
	}
	if http, err = s.withABRoutes(http, ab); err != nil {
		return nil, fmt.Errorf("VirtualService %s/%s: %w", vs.Namespace, vs.Name, err)
	}
	if http, err = s.withExtras(http, e); err != nil {
		return nil, fmt.Errorf("VirtualService %s/%s: %w", vs.Namespace, vs.Name, err)
	}
	return http, nil
}

// setReferenced edits the managed destinations of the referenced VirtualService to w, keeping its
// A/B routes if it has them. errors: see SetRoutes.
func (r *Router) setReferenced(ctx context.Context, canary *sluicev1.Canary, w providers.Weights) error {
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
	http, err := referencedHTTP(vs, canary, &w, ab, scopeOf(canary).extrasOf(vs.Spec.GetHttp()))
	if err != nil {
		return err
	}
	return r.writeReferenced(ctx, vs, http)
}

// setReferencedAB adds the A/B routes for ab to the referenced VirtualService (none: removes
// them), leaving the weights as they are. errors: see SetABRoutes.
func (r *Router) setReferencedAB(ctx context.Context, canary *sluicev1.Canary, ab []*networkingv1.HTTPMatchRequest) error {
	vs, err := r.getVirtualService(ctx, canary, canary.Spec.Service.RouteRef.Name)
	if err != nil {
		return err
	}
	http, err := referencedHTTP(vs, canary, nil, ab, scopeOf(canary).extrasOf(vs.Spec.GetHttp()))
	if err != nil {
		return err
	}
	return r.writeReferenced(ctx, vs, http)
}

// writeReferenced applies http to the referenced vs unless it already has it. Before the first
// edit it records the spec (without A/B routes) in AnnotationOriginalRoute.
func (r *Router) writeReferenced(ctx context.Context, vs *istionetv1.VirtualService, http []*networkingv1.HTTPRoute) error {
	if protosEqual(http, vs.Spec.GetHttp()) {
		return nil
	}
	original, ok := vs.Annotations[AnnotationOriginalRoute]
	if !ok {
		spec := &vs.Spec
		if hasABRoutes(spec.GetHttp()) {
			spec = proto.CloneOf(spec)
			spec.Http = withoutABRoutes(spec.Http)
		}
		b, err := protojson.Marshal(spec)
		if err != nil {
			return fmt.Errorf("recording the original spec of VirtualService %s/%s: %w", vs.Namespace, vs.Name, err)
		}
		original = string(b)
	}
	return r.applyHTTP(ctx, vs, http, map[string]string{AnnotationOriginalRoute: original})
}

// finalizeReferenced undoes what Sluice changed in spec.http (see restoredHTTP, which takes the
// destinations Sluice split from AnnotationOriginalRoute) and drops the annotation; every edit
// the user made since adoption stays.
// errors: an annotation that is not a VirtualService spec, API errors.
func (r *Router) finalizeReferenced(ctx context.Context, canary *sluicev1.Canary) error {
	vs, err := r.getVirtualService(ctx, canary, canary.Spec.Service.RouteRef.Name)
	if err != nil {
		if errors.Is(err, providers.ErrRouteNotFound) {
			return nil
		}
		return err
	}
	original, ok := vs.Annotations[AnnotationOriginalRoute]
	if !ok {
		return nil
	}
	spec := &networkingv1.VirtualService{}
	if err := protojson.Unmarshal([]byte(original), spec); err != nil {
		return fmt.Errorf("VirtualService %s/%s: annotation %s is not a VirtualService spec: %w",
			vs.Namespace, vs.Name, AnnotationOriginalRoute, err)
	}
	return r.applyHTTP(ctx, vs, scopeOf(canary).restoredHTTP(vs.Spec.GetHttp(), spec.GetHttp()), nil)
}

// restoredHTTP undoes Sluice's edits to routes and only those: A/B and session-affinity routes
// and the mirror and Set-Cookie header go, and each primary/canary destination pair becomes the
// apex destination again. A managed route whose destinations are still exactly what Sluice made
// of the recorded route at the same index (split at the current weights) gets the recorded
// destinations back as written; one the user changed since gets a single apex destination (the
// primary's, renamed). Everything else (matches, timeouts, retries, rewrites, names, and routes
// Sluice never managed) is kept as it is now, so edits made since adoption survive.
func (s scope) restoredHTTP(routes, recorded []*networkingv1.HTTPRoute) []*networkingv1.HTTPRoute {
	current := s.withoutExtras(withoutABRoutes(routes))
	w, _, werr := s.weightsOf(current)
	out := make([]*networkingv1.HTTPRoute, len(current))
	for i, route := range current {
		out[i] = proto.CloneOf(route)
		byRole, err := s.classify(route.GetRoute())
		if err != nil || byRole == nil || len(byRole[roleApex]) > 0 {
			continue // not split by Sluice
		}
		if werr == nil && i < len(recorded) {
			split, managed, err := s.splitRoute(recorded[i].GetRoute(), w)
			if err == nil && managed && len(s.apexOf(recorded[i])) > 0 && protosEqual(split, route.GetRoute()) {
				out[i].Route = recorded[i].GetRoute()
				continue
			}
		}
		half := byRole[rolePrimary]
		from := s.names.Primary
		if len(half) == 0 {
			half, from = byRole[roleCanary], s.names.Canary
		}
		apex := proto.CloneOf(half[0])
		apex.Destination.Host = renameHost(apex.GetDestination().GetHost(), from, s.names.Apex)
		apex.Destination.Subset, apex.Weight = "", 0
		out[i].Route = []*networkingv1.HTTPRouteDestination{apex}
	}
	return out
}

// apexOf returns the destinations of route naming the apex service.
func (s scope) apexOf(route *networkingv1.HTTPRoute) []*networkingv1.HTTPRouteDestination {
	var out []*networkingv1.HTTPRouteDestination
	for _, d := range route.GetRoute() {
		if s.role(d.GetDestination().GetHost()) == roleApex {
			out = append(out, d)
		}
	}
	return out
}

// protosEqual reports whether two lists of Istio API messages are equal element by element.
func protosEqual[T proto.Message](a, b []T) bool {
	return slices.EqualFunc(a, b, func(x, y T) bool { return proto.Equal(x, y) })
}

// applyHTTP applies spec.http and Sluice's annotations (nil: none, which removes the ones Sluice
// set) to vs, on the condition that vs is unchanged since it was read (resourceVersion).
func (r *Router) applyHTTP(ctx context.Context, vs *istionetv1.VirtualService, http []*networkingv1.HTTPRoute, annotations map[string]string) error {
	ac := istioapplyv1.VirtualService(vs.Name, vs.Namespace).WithResourceVersion(vs.ResourceVersion)
	if annotations != nil {
		ac.WithAnnotations(annotations)
	}
	ac.Spec = &networkingv1.VirtualService{Http: http}
	return r.apply(ctx, &vsApply{ac})
}
