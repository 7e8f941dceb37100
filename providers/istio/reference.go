package istio

import (
	"context"
	"errors"
	"fmt"

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
	if httpEqual(http, vs.Spec.GetHttp()) {
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

// finalizeReferenced restores spec.http from AnnotationOriginalRoute and drops the annotation.
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
	return r.applyHTTP(ctx, vs, spec.GetHttp(), nil)
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

// httpEqual reports whether two route lists are equal as protos.
func httpEqual(a, b []*networkingv1.HTTPRoute) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !proto.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}
