package istio

import (
	"context"
	"fmt"

	networkingv1 "istio.io/api/networking/v1"
	istionetv1 "istio.io/client-go/pkg/apis/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/providers"
)

// AnnotationOriginalRoute is set by Sluice on a referenced VirtualService before its first edit:
// the VirtualService spec as it was, in protojson. Finalize restores spec.http from it and
// removes it.
const AnnotationOriginalRoute = "sluice.dev/original-route"

// routeRefKind is the routeRef kind this provider accepts.
const routeRefKind = "VirtualService"

// Router is the Istio providers.Router. It reads through c (a cached manager client is fine: reads
// then cost no API requests) and writes with server-side apply.
type Router struct {
	c client.Client
}

var _ providers.Router = (*Router)(nil)

// New returns a Router using c, whose scheme must hold the Istio networking v1 types
// (istionetv1.AddToScheme).
func New(c client.Client) *Router {
	return &Router{c: providers.ReadOwnWrites(c)}
}

// Reconcile ensures the generated VirtualService and DestinationRules (creating the
// VirtualService at 100/0, keeping the weights and A/B routes of an existing one), or checks that
// the referenced VirtualService exists and routes to the apex service in a way Sluice can split;
// in reference mode it writes only to converge A/B routes already present to
// spec.analysis.match and the routes they copy. errors: ErrRouteNotFound, ErrNoApexRoute, ErrUnsupportedRoute,
// ErrInvalidSpec, a generated object that exists but is not controlled by the Canary, API errors.
func (r *Router) Reconcile(ctx context.Context, canary *sluicev1.Canary) error {
	ref, err := referenced(canary)
	if err != nil {
		return err
	}
	if ref {
		return r.checkReferenced(ctx, canary)
	}
	return r.reconcileGenerated(ctx, canary)
}

// SetRoutes sets every managed route to w (percent, primary+canary = 100). Nothing is written
// when the routes already have w. errors: Weights.Validate errors, ErrRouteNotFound,
// ErrNoApexRoute, ErrUnsupportedRoute, ErrInvalidSpec, API errors (Conflict after a concurrent
// change: retry on the next tick).
func (r *Router) SetRoutes(ctx context.Context, canary *sluicev1.Canary, w providers.Weights) error {
	if err := w.Validate(); err != nil {
		return err
	}
	ref, err := referenced(canary)
	if err != nil {
		return err
	}
	if ref {
		return r.setReferenced(ctx, canary, w)
	}
	return r.setGenerated(ctx, canary, w)
}

// GetRoutes reads the split of the managed routes back from the VirtualService; A/B routes are
// not counted.
// errors: ErrRouteNotFound, ErrNoApexRoute, ErrUnsupportedRoute, providers.ErrWeightDrift when
// managed routes disagree or do not sum to 100, API errors.
func (r *Router) GetRoutes(ctx context.Context, canary *sluicev1.Canary) (providers.Weights, error) {
	ref, err := referenced(canary)
	if err != nil {
		return providers.Weights{}, err
	}
	vs, err := r.getVirtualService(ctx, canary, virtualServiceName(canary, ref))
	if err != nil {
		return providers.Weights{}, err
	}
	w, managed, err := scopeOf(canary).weightsOf(vs.Spec.GetHttp())
	if err != nil {
		return providers.Weights{}, fmt.Errorf("VirtualService %s/%s: %w", vs.Namespace, vs.Name, err)
	}
	if managed == 0 {
		return providers.Weights{}, noApexRoute(vs, canary)
	}
	return w, nil
}

// SetABRoutes adds the A/B routes of spec.analysis.match (on) or removes them (off), keeping the
// weights; see withABRoutes. Nothing is written when the VirtualService is already so. In
// reference mode the spec is recorded in AnnotationOriginalRoute before the first edit, as
// SetRoutes does. errors: ErrRouteNotFound, ErrNoApexRoute, ErrUnsupportedRoute, ErrInvalidSpec
// (a match that cannot be converted or combined), API errors (Conflict: retry).
func (r *Router) SetABRoutes(ctx context.Context, canary *sluicev1.Canary, on bool) error {
	ref, err := referenced(canary)
	if err != nil {
		return err
	}
	var ab []*networkingv1.HTTPMatchRequest
	if on {
		if ab, err = abMatches(canary); err != nil {
			return err
		}
	}
	if ref {
		return r.setReferencedAB(ctx, canary, ab)
	}
	return r.setGeneratedAB(ctx, canary, len(ab) > 0)
}

// GetABRoutes reports whether the VirtualService holds A/B routes.
// errors: ErrRouteNotFound, ErrInvalidSpec for an unsupported routeRef, API errors.
func (r *Router) GetABRoutes(ctx context.Context, canary *sluicev1.Canary) (bool, error) {
	ref, err := referenced(canary)
	if err != nil {
		return false, err
	}
	vs, err := r.getVirtualService(ctx, canary, virtualServiceName(canary, ref))
	if err != nil {
		return false, err
	}
	return hasABRoutes(vs.Spec.GetHttp()), nil
}

// Finalize restores the user's routing: reference mode puts spec.http back as it was before
// Sluice's first edit and removes AnnotationOriginalRoute (nothing to do when Sluice never edited
// it or it is gone); generated mode deletes the VirtualService and DestinationRules the Canary
// controls. errors: a corrupt annotation, API errors.
func (r *Router) Finalize(ctx context.Context, canary *sluicev1.Canary) error {
	ref, err := referenced(canary)
	if err != nil {
		return err
	}
	if ref {
		return r.finalizeReferenced(ctx, canary)
	}
	return r.finalizeGenerated(ctx, canary)
}

// referenced reports whether the Canary references a VirtualService (reference mode).
// errors: a routeRef of another kind or API group.
func referenced(canary *sluicev1.Canary) (bool, error) {
	ref := canary.Spec.Service.RouteRef
	if ref == nil {
		return false, nil
	}
	if ref.Kind != routeRefKind {
		return false, fmt.Errorf("%w: spec.service.routeRef kind %q: the istio provider routes with a %s",
			ErrInvalidSpec, ref.Kind, routeRefKind)
	}
	if ref.APIVersion != "" {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil || gv.Group != istionetv1.SchemeGroupVersion.Group {
			return false, fmt.Errorf("%w: spec.service.routeRef apiVersion %q: want %s/<version>",
				ErrInvalidSpec, ref.APIVersion, istionetv1.SchemeGroupVersion.Group)
		}
	}
	return true, nil
}

// virtualServiceName is the name of the VirtualService the Canary routes with.
func virtualServiceName(canary *sluicev1.Canary, ref bool) string {
	if ref {
		return canary.Spec.Service.RouteRef.Name
	}
	return canary.ServiceNames().Apex
}

// scopeOf returns the Canary's services and namespace.
func scopeOf(canary *sluicev1.Canary) scope {
	return scope{names: canary.ServiceNames(), namespace: canary.Namespace}
}

// getVirtualService reads the VirtualService name in the Canary's namespace.
// errors: ErrRouteNotFound (wrapped with the key), API errors.
func (r *Router) getVirtualService(ctx context.Context, canary *sluicev1.Canary, name string) (*istionetv1.VirtualService, error) {
	vs := &istionetv1.VirtualService{}
	key := types.NamespacedName{Namespace: canary.Namespace, Name: name}
	if err := r.c.Get(ctx, key, vs); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("%w: VirtualService %s", providers.ErrRouteNotFound, key)
		}
		return nil, fmt.Errorf("reading VirtualService %s: %w", key, err)
	}
	return vs, nil
}

func noApexRoute(vs *istionetv1.VirtualService, canary *sluicev1.Canary) error {
	n := canary.ServiceNames()
	return fmt.Errorf("%w: VirtualService %s/%s has no route destination for %s, %s or %s",
		ErrNoApexRoute, vs.Namespace, vs.Name, n.Apex, n.Primary, n.Canary)
}
