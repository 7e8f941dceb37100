package gatewayapi

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwapplyv1 "sigs.k8s.io/gateway-api/applyconfiguration/apis/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/providers"
)

// generatedKey is the generated route's name: the apex Service's, in the Canary's namespace.
func generatedKey(canary *sluicev1.Canary) types.NamespacedName {
	return types.NamespacedName{Namespace: canary.Namespace, Name: canary.ServiceNames().Apex}
}

func (r *Router) reconcileGenerated(ctx context.Context, canary *sluicev1.Canary) error {
	route, err := r.generatedRoute(ctx, canary)
	switch {
	case errors.Is(err, providers.ErrRouteNotFound):
		return r.applyGenerated(ctx, canary, nil, providers.CanaryWeight(0), false, extras{}, "Creating HTTPRoute")
	case err != nil:
		return err
	}
	s := servicesOf(canary)
	return r.applyGenerated(ctx, canary, route, currentWeights(route, s),
		hasABRules(route.Spec.Rules), s.extrasOf(route.Spec.Rules), "Updating HTTPRoute")
}

func (r *Router) setGenerated(ctx context.Context, canary *sluicev1.Canary, w providers.Weights) error {
	route, err := r.generatedRoute(ctx, canary)
	if err != nil {
		return err
	}
	return r.applyGenerated(ctx, canary, route, w, hasABRules(route.Spec.Rules), servicesOf(canary).extrasOf(route.Spec.Rules),
		"Setting HTTPRoute weights")
}

func (r *Router) setGeneratedAB(ctx context.Context, canary *sluicev1.Canary, on bool) error {
	route, err := r.generatedRoute(ctx, canary)
	if err != nil {
		return err
	}
	why := "Removing HTTPRoute A/B rules"
	if on {
		why = "Adding HTTPRoute A/B rules"
	}
	s := servicesOf(canary)
	return r.applyGenerated(ctx, canary, route, currentWeights(route, s), on, s.extrasOf(route.Spec.Rules), why)
}

func (r *Router) finalizeGenerated(ctx context.Context, canary *sluicev1.Canary) error {
	route, err := r.generatedRoute(ctx, canary)
	if errors.Is(err, providers.ErrRouteNotFound) || errors.Is(err, ErrRouteConflict) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := r.c.Delete(ctx, route, client.Preconditions{UID: &route.UID}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting HTTPRoute %s: %w", client.ObjectKeyFromObject(route), err)
	}
	return nil
}

// generatedRoute reads the generated route.
// errors: ErrRouteNotFound, ErrRouteConflict when the Canary does not control it (wrapped).
func (r *Router) generatedRoute(ctx context.Context, canary *sluicev1.Canary) (*gwv1.HTTPRoute, error) {
	key := generatedKey(canary)
	route, err := r.getRoute(ctx, key)
	if err != nil {
		return nil, err
	}
	if !metav1.IsControlledBy(route, canary) {
		return nil, fmt.Errorf("%w: HTTPRoute %s, Canary %s", ErrRouteConflict, key, canary.Name)
	}
	return route, nil
}

// applyGenerated applies the generated route with weights w (raw: Reconcile passes whatever the
// route carries), with ab its A/B rules, and extras e, unless existing already has that spec. With
// existing's resourceVersion set, the apply fails with a Conflict when the route changed since it
// was read.
func (r *Router) applyGenerated(ctx context.Context, canary *sluicev1.Canary, existing *gwv1.HTTPRoute, w providers.Weights, ab bool, e extras, why string) error {
	spec, err := generatedSpec(canary, w, ab)
	if err != nil {
		return err
	}
	if spec.Rules, err = servicesOf(canary).withExtras(spec.Rules, e); err != nil {
		return err
	}
	if existing != nil && len(spec.Hostnames) == 0 && len(existing.Spec.Hostnames) > 0 {
		if existing, err = r.removeHostnames(ctx, existing); err != nil {
			return err
		}
	}
	if existing != nil && sameSpec(existing.Spec, spec) {
		return nil
	}
	specAC, err := specApply(spec)
	if err != nil {
		return err
	}
	key := generatedKey(canary)
	route := gwapplyv1.HTTPRoute(key.Name, key.Namespace).
		WithLabels(map[string]string{sluicev1.LabelCanary: canary.Name}).
		WithOwnerReferences(metav1ac.OwnerReference().
			WithAPIVersion(sluicev1.GroupVersion.String()).
			WithKind("Canary").
			WithName(canary.Name).
			WithUID(canary.UID).
			WithController(true).
			WithBlockOwnerDeletion(true)).
		WithSpec(specAC)
	if existing != nil && existing.ResourceVersion != "" {
		route.WithResourceVersion(existing.ResourceVersion)
	}
	return r.apply(ctx, route, why)
}

// removeHostnames removes hostnames someone else added to the generated route, which an apply
// cannot do (it can only say what a field holds, not that it must be absent). The merge patch is
// conditioned on route's resourceVersion, if set, like the apply that follows; it returns the route
// as patched, keeping an empty resourceVersion empty.
func (r *Router) removeHostnames(ctx context.Context, route *gwv1.HTTPRoute) (*gwv1.HTTPRoute, error) {
	patched := route.DeepCopy()
	patched.Spec.Hostnames = nil
	patch := client.MergeFrom(route)
	if route.ResourceVersion != "" {
		patch = client.MergeFromWithOptions(route, client.MergeFromWithOptimisticLock{})
	}
	if err := r.c.Patch(ctx, patched, patch, client.FieldOwner(providers.FieldManager)); err != nil {
		return nil, fmt.Errorf("removing hostnames from HTTPRoute %s: %w", client.ObjectKeyFromObject(route), err)
	}
	if route.ResourceVersion == "" {
		patched.ResourceVersion = ""
	}
	return patched, nil
}

// sameSpec compares the fields of the generated spec (parentRefs, hostnames, rules; all atomic).
func sameSpec(have, want gwv1.HTTPRouteSpec) bool {
	return equality.Semantic.DeepEqual(have.ParentRefs, want.ParentRefs) &&
		equality.Semantic.DeepEqual(have.Hostnames, want.Hostnames) &&
		equality.Semantic.DeepEqual(have.Rules, want.Rules)
}

// currentWeights returns the raw weights of the first primary and canary backendRefs of the
// generated route outside A/B rules, so Reconcile keeps them whatever they are. A missing half gets
// the remainder of TotalWeight; a route with neither starts at 100/0.
func currentWeights(route *gwv1.HTTPRoute, s services) providers.Weights {
	var primary, canary *int32
	for _, rule := range route.Spec.Rules {
		if isCopyRule(rule) {
			continue
		}
		for i := range rule.BackendRefs {
			ref := &rule.BackendRefs[i]
			w := int32(weightOf(ref))
			switch s.role(ref.BackendObjectReference) {
			case rolePrimary:
				if primary == nil {
					primary = &w
				}
			case roleCanary:
				if canary == nil {
					canary = &w
				}
			}
		}
	}
	switch {
	case primary != nil && canary != nil:
		return providers.Weights{Primary: *primary, Canary: *canary}
	case canary != nil:
		return providers.Weights{Primary: max(0, providers.TotalWeight-*canary), Canary: *canary}
	case primary != nil:
		return providers.Weights{Primary: *primary, Canary: max(0, providers.TotalWeight-*primary)}
	}
	return providers.CanaryWeight(0)
}

// generatedSpec is the spec of the generated HTTPRoute, with every field the API server would
// default spelled out so it compares equal to the stored route when nothing changed:
//   - parentRefs: spec.service.gatewayRefs (kind Gateway: north-south through that Gateway; kind
//     Service, group "": east-west mesh routing, GAMMA, as Linkerd does); none given means a
//     Service parentRef to the apex Service on spec.service.port;
//   - hostnames: spec.service.hosts;
//   - one rule: matches from spec.service.match (see convertMatches), header modifier filters from
//     spec.service.headers, a URLRewrite filter from spec.service.rewrite, timeouts.request and
//     timeouts.backendRequest from spec.service.timeout and backendTimeout, and backendRefs
//     <apex>-primary and <apex>-canary on spec.service.port with weights w.Primary and w.Canary;
//   - with ab and spec.analysis.match, that rule's A/B rule before it (see withABRules).
//
// spec.service.retries is not rendered: HTTPRouteRule.retry is experimental-channel only in
// Gateway API v1.6 and the standard-channel CRD rejects it.
// errors: ErrInvalidSpec (wrapped) from the match and timeout conversions and withABRules.
func generatedSpec(canary *sluicev1.Canary, w providers.Weights, ab bool) (gwv1.HTTPRouteSpec, error) {
	svc := canary.Spec.Service
	names := canary.ServiceNames()
	port := ptr.To(gwv1.PortNumber(svc.Port))

	var spec gwv1.HTTPRouteSpec
	for _, p := range svc.GatewayRefs {
		p := *p.DeepCopy()
		if p.Group == nil {
			p.Group = ptr.To(gwv1.Group(gwv1.GroupName))
		}
		if p.Kind == nil {
			p.Kind = ptr.To(gwv1.Kind("Gateway"))
		}
		spec.ParentRefs = append(spec.ParentRefs, p)
	}
	if len(spec.ParentRefs) == 0 {
		spec.ParentRefs = []gwv1.ParentReference{{
			Group: ptr.To(gwv1.Group("")), Kind: ptr.To(gwv1.Kind("Service")),
			Name: gwv1.ObjectName(names.Apex), Port: port,
		}}
	}
	for _, h := range svc.Hosts {
		spec.Hostnames = append(spec.Hostnames, gwv1.Hostname(h))
	}

	matches, err := convertMatches(svc.Match)
	if err != nil {
		return spec, err
	}
	rule := gwv1.HTTPRouteRule{
		Matches: matches,
		Filters: headerFilters(svc.Headers),
		BackendRefs: []gwv1.HTTPBackendRef{
			serviceBackend(names.Primary, port, w.Primary),
			serviceBackend(names.Canary, port, w.Canary),
		},
	}
	rewrite, err := rewriteFilter(svc.Rewrite, matches)
	if err != nil {
		return spec, err
	}
	if rewrite != nil {
		rule.Filters = append(rule.Filters, *rewrite)
	}
	if rule.Timeouts, err = timeouts(svc.Timeout, svc.BackendTimeout); err != nil {
		return spec, err
	}
	spec.Rules = []gwv1.HTTPRouteRule{rule}
	if !ab {
		return spec, nil
	}
	matchesAB, err := abMatches(canary)
	if err != nil {
		return spec, err
	}
	spec.Rules, err = servicesOf(canary).withABRules(spec.Rules, matchesAB)
	return spec, err
}

func serviceBackend(name string, port *gwv1.PortNumber, weight int32) gwv1.HTTPBackendRef {
	return gwv1.HTTPBackendRef{BackendRef: gwv1.BackendRef{
		BackendObjectReference: gwv1.BackendObjectReference{
			Group: ptr.To(gwv1.Group("")), Kind: ptr.To(gwv1.Kind("Service")),
			Name: gwv1.ObjectName(name), Port: ptr.To(*port),
		},
		Weight: ptr.To(weight),
	}}
}
