package gatewayapi

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/providers"
)

// AnnotationOriginalRules is set by Sluice on a referenced HTTPRoute before its first edit: the
// JSON of the route's spec.rules as the user wrote them. Finalize puts them back and removes it.
const AnnotationOriginalRules = "sluice.dev/original-route"

// ErrNoApexBackend means a referenced HTTPRoute has no backendRef to the Canary's apex Service (nor
// to the primary and canary Services Sluice splits it into), so there is nothing to shift.
var ErrNoApexBackend error = providers.Permanent(sluicev1.ReasonRouteError, "HTTPRoute has no backendRef to the apex service")

// ErrRouteConflict means an HTTPRoute with the generated route's name exists and is not controlled
// by the Canary; Sluice does not take it over (point spec.service.routeRef at it instead).
var ErrRouteConflict error = providers.Permanent(sluicev1.ReasonRouteConflict, "HTTPRoute exists and is not controlled by the Canary")

// Router shifts a Canary's traffic with a Gateway API HTTPRoute (gateway.networking.k8s.io/v1).
//
// Generated mode (no spec.service.routeRef): Sluice owns an HTTPRoute named after the apex Service
// in the Canary's namespace, controlled by the Canary; see generatedSpec for its shape.
//
// Reference mode (spec.service.routeRef of kind HTTPRoute): the user owns the route. Sluice splits
// each backendRef to the apex Service into a primary and a canary backendRef and changes nothing
// else; the rules as first found are kept in AnnotationOriginalRules for Finalize.
//
// A/B routing (SetABRoutes, both modes) adds an A/B rule before every rule that routes to the
// Canary's Services: see withABRules for its matches, backends and precedence. Weights are read
// from and written to the other rules only.
//
// Reads go through the client given to New (a manager's cached client is fine: an idle Canary
// costs no API request), which sees the router's own writes at once (providers.ReadOwnWrites);
// writes are server-side applies with field manager providers.FieldManager, made only when
// something changes, and conditioned on the resourceVersion read in both modes: every write
// rebuilds the atomic rules list from the route as read, so a route changed since (an edit the
// cache has not shown yet) fails the write with a Conflict instead of losing that change.
type Router struct {
	c client.Client
}

var _ providers.Router = (*Router)(nil)

// New returns a Router reading and writing HTTPRoutes through c, whose scheme must know the
// Gateway API v1 types.
func New(c client.Client) *Router {
	return &Router{c: providers.ReadOwnWrites(c)}
}

// Reconcile creates the generated route at primary=100/canary=0, or converges its spec keeping
// its weights and its A/B rules, if any (generated mode); or checks that the referenced route
// exists and has a backendRef to the apex Service (reference mode: the first SetRoutes splits it;
// until then GetRoutes reads it as 100/0), writing only to converge A/B rules it already holds to
// spec.analysis.match and the rules they copy.
// errors: ErrRouteNotFound, ErrNoApexBackend, ErrRouteConflict, ErrInvalidSpec (all wrapped), API
// errors (a Conflict when the route changed since it was read: retry).
func (r *Router) Reconcile(ctx context.Context, canary *sluicev1.Canary) error {
	ref, err := routeRef(canary)
	if err != nil {
		return err
	}
	if ref == nil {
		return r.reconcileGenerated(ctx, canary)
	}
	return r.reconcileReference(ctx, canary, ref)
}

// SetRoutes sets every primary/canary pair of the route to w (percent; see splitRule for rules
// that also route to other backends), splitting apex backendRefs into pairs first in reference
// mode. It re-reads the route and rewrites only the managed backendRefs, so edits made to anything
// else since the last call survive; it writes nothing when the route already carries w.
// errors: Weights.Validate errors (nothing written), ErrRouteNotFound, ErrNoApexBackend,
// ErrRouteConflict, ErrInvalidSpec (wrapped), API errors.
func (r *Router) SetRoutes(ctx context.Context, canary *sluicev1.Canary, w providers.Weights) error {
	if err := w.Validate(); err != nil {
		return err
	}
	ref, err := routeRef(canary)
	if err != nil {
		return err
	}
	if ref == nil {
		return r.setGenerated(ctx, canary, w)
	}
	return r.setReference(ctx, canary, ref, w)
}

// GetRoutes reads the split back from the route: every primary/canary pair outside A/B rules must
// carry the same split, with weights summing to TotalWeight (or a multiple of it in rules shared
// with other backends). In reference mode an apex backendRef not yet split counts as 100/0.
// errors: ErrRouteNotFound, ErrNoApexBackend (wrapped), pairs that disagree or do not sum to a
// multiple of TotalWeight, API errors.
func (r *Router) GetRoutes(ctx context.Context, canary *sluicev1.Canary) (providers.Weights, error) {
	ref, err := routeRef(canary)
	if err != nil {
		return providers.Weights{}, err
	}
	key, countApex := routeKey(canary, ref), ref != nil
	route, err := r.getRoute(ctx, key)
	if err != nil {
		return providers.Weights{}, err
	}
	w, err := servicesOf(canary).readWeights(route.Spec.Rules, countApex)
	if errors.Is(err, errNoBackend) && ref != nil {
		err = fmt.Errorf("%w: HTTPRoute %s: %w", ErrNoApexBackend, key, err)
	} else if err != nil {
		err = fmt.Errorf("HTTPRoute %s: %w", key, err)
	}
	return w, err
}

// SetABRoutes adds the A/B rules for spec.analysis.match (on) or removes them (off), keeping the
// weights, and writes nothing when the route is already so; see withABRules. In reference mode the
// rules as first found are recorded in AnnotationOriginalRules before the first edit, as SetRoutes
// does. errors: ErrRouteNotFound, ErrNoApexBackend, ErrRouteConflict, ErrInvalidSpec (wrapped: a
// match that cannot be converted or combined, a route too big for the A/B rules), API errors.
func (r *Router) SetABRoutes(ctx context.Context, canary *sluicev1.Canary, on bool) error {
	ref, err := routeRef(canary)
	if err != nil {
		return err
	}
	var ab []gwv1.HTTPRouteMatch
	if on {
		if ab, err = abMatches(canary); err != nil {
			return err
		}
	}
	if ref == nil {
		return r.setGeneratedAB(ctx, canary, len(ab) > 0)
	}
	return r.setReferenceAB(ctx, canary, ref, ab)
}

// GetABRoutes reports whether the route holds A/B rules.
// errors: ErrRouteNotFound, ErrInvalidSpec (wrapped) for an unsupported routeRef, API errors.
func (r *Router) GetABRoutes(ctx context.Context, canary *sluicev1.Canary) (bool, error) {
	ref, err := routeRef(canary)
	if err != nil {
		return false, err
	}
	route, err := r.getRoute(ctx, routeKey(canary, ref))
	if err != nil {
		return false, err
	}
	return hasABRules(route.Spec.Rules), nil
}

// Finalize restores the referenced route's rules from AnnotationOriginalRules and removes the
// annotation (reference mode; a route Sluice never edited is left alone), or deletes the generated
// route (generated mode). A missing route is not an error.
// errors: an unreadable annotation, API errors.
func (r *Router) Finalize(ctx context.Context, canary *sluicev1.Canary) error {
	ref, err := routeRef(canary)
	if err != nil {
		return err
	}
	if ref == nil {
		return r.finalizeGenerated(ctx, canary)
	}
	return r.finalizeReference(ctx, canary, ref)
}

// routeRef returns spec.service.routeRef, nil in generated mode.
// errors: ErrInvalidSpec (wrapped) for a reference to anything but a Gateway API HTTPRoute.
func routeRef(canary *sluicev1.Canary) (*sluicev1.RouteReference, error) {
	ref := canary.Spec.Service.RouteRef
	if ref == nil {
		return nil, nil
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if ref.Kind != "HTTPRoute" || err != nil || (ref.APIVersion != "" && gv.Group != gwv1.GroupName) {
		return nil, fmt.Errorf("%w: routeRef %s %s: only HTTPRoute (%s) is supported",
			ErrInvalidSpec, ref.APIVersion, ref.Kind, gwv1.GroupName)
	}
	return ref, nil
}

// routeKey is the route the Canary routes with: the referenced one (ref set) or the generated one.
func routeKey(canary *sluicev1.Canary, ref *sluicev1.RouteReference) types.NamespacedName {
	if ref != nil {
		return types.NamespacedName{Namespace: canary.Namespace, Name: ref.Name}
	}
	return generatedKey(canary)
}

// getRoute reads an HTTPRoute. errors: ErrRouteNotFound (wrapped), API errors.
func (r *Router) getRoute(ctx context.Context, key types.NamespacedName) (*gwv1.HTTPRoute, error) {
	route := &gwv1.HTTPRoute{}
	if err := r.c.Get(ctx, key, route); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("%w: HTTPRoute %s", providers.ErrRouteNotFound, key)
		}
		return nil, fmt.Errorf("reading HTTPRoute %s: %w", key, err)
	}
	return route, nil
}

func servicesOf(canary *sluicev1.Canary) services {
	return services{namespace: canary.Namespace, names: canary.ServiceNames()}
}
