package gatewayapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwapplyv1 "sigs.k8s.io/gateway-api/applyconfiguration/apis/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/providers"
)

// reconcileReference checks the referenced route. It writes only to converge A/B rules already
// present (see Router.Reconcile); the first SetRoutes splits the apex backendRefs.
func (r *Router) reconcileReference(ctx context.Context, canary *sluicev1.Canary, ref *sluicev1.RouteReference) error {
	route, s, err := r.referencedRoute(ctx, canary, ref)
	if err != nil || !hasABRules(route.Spec.Rules) {
		return err
	}
	ab, err := abMatches(canary)
	if err != nil {
		return err
	}
	rules, err := s.desiredRules(route.Spec.Rules, nil, ab, s.extrasOf(route.Spec.Rules))
	if err != nil {
		return fmt.Errorf("HTTPRoute %s: %w", client.ObjectKeyFromObject(route), err)
	}
	return r.writeReference(ctx, route, s, rules, "Updating HTTPRoute A/B rules")
}

// setReference sets the pairs to w, keeping A/B rules if the route has them.
func (r *Router) setReference(ctx context.Context, canary *sluicev1.Canary, ref *sluicev1.RouteReference, w providers.Weights) error {
	route, s, err := r.referencedRoute(ctx, canary, ref)
	if err != nil {
		return err
	}
	var ab []gwv1.HTTPRouteMatch
	if hasABRules(route.Spec.Rules) {
		if ab, err = abMatches(canary); err != nil {
			return err
		}
	}
	rules, err := s.desiredRules(route.Spec.Rules, &w, ab, s.extrasOf(route.Spec.Rules))
	if err != nil {
		return fmt.Errorf("HTTPRoute %s: %w", client.ObjectKeyFromObject(route), err)
	}
	return r.writeReference(ctx, route, s, rules,
		fmt.Sprintf("Setting HTTPRoute backends %s=%d %s=%d", s.names.Primary, w.Primary, s.names.Canary, w.Canary))
}

// setReferenceAB adds A/B rules for ab (none: removes them), leaving the weights as they are.
func (r *Router) setReferenceAB(ctx context.Context, canary *sluicev1.Canary, ref *sluicev1.RouteReference, ab []gwv1.HTTPRouteMatch) error {
	route, s, err := r.referencedRoute(ctx, canary, ref)
	if err != nil {
		return err
	}
	rules, err := s.desiredRules(route.Spec.Rules, nil, ab, s.extrasOf(route.Spec.Rules))
	if err != nil {
		return fmt.Errorf("HTTPRoute %s: %w", client.ObjectKeyFromObject(route), err)
	}
	why := "Removing HTTPRoute A/B rules"
	if len(ab) > 0 {
		why = "Adding HTTPRoute A/B rules"
	}
	return r.writeReference(ctx, route, s, rules, why)
}

// referencedRoute reads the route spec.service.routeRef names.
// errors: ErrRouteNotFound, ErrNoApexBackend (wrapped), API errors.
func (r *Router) referencedRoute(ctx context.Context, canary *sluicev1.Canary, ref *sluicev1.RouteReference) (*gwv1.HTTPRoute, services, error) {
	key := types.NamespacedName{Namespace: canary.Namespace, Name: ref.Name}
	s := servicesOf(canary)
	route, err := r.getRoute(ctx, key)
	if err != nil {
		return nil, s, err
	}
	for _, rule := range route.Spec.Rules {
		if s.manages(rule.BackendRefs) {
			return route, s, nil
		}
	}
	return nil, s, fmt.Errorf("%w: HTTPRoute %s has no backendRef to Service %s (nor %s, %s) in namespace %s",
		ErrNoApexBackend, key, s.names.Apex, s.names.Primary, s.names.Canary, s.namespace)
}

// writeReference applies rules (computed from the route's by desiredRules) when they differ from
// the route's (or the annotation of a split route is missing). Before the first edit (and whenever the route holds no pair, e.g. after the user re-applied
// their manifest) the rules as found are recorded in AnnotationOriginalRules (if someone removed
// the annotation from a split route, the unsplitRules reconstruction of its rules without A/B
// rules). The apply carries the route's resourceVersion: a route edited since it was read fails
// with a Conflict instead of losing the edit.
func (r *Router) writeReference(ctx context.Context, route *gwv1.HTTPRoute, s services, rules []gwv1.HTTPRouteRule, why string) error {
	key := client.ObjectKeyFromObject(route)
	original, recorded := route.Annotations[AnnotationOriginalRules]
	split := s.hasPairs(route.Spec.Rules)
	if equality.Semantic.DeepEqual(rules, route.Spec.Rules) && (recorded || !split) {
		return nil // nothing to change, and nothing to record for a route Sluice did not edit
	}
	if !recorded || !split {
		found := route.Spec.Rules
		if split { // the annotation was removed: record the best reconstruction
			found = s.unsplitRules(withoutABRules(s.withoutExtras(found)))
		}
		data, err := json.Marshal(found)
		if err != nil {
			return fmt.Errorf("HTTPRoute %s: recording the original rules: %w", key, err)
		}
		original = string(data)
	}
	rulesAC, err := rulesApply(rules)
	if err != nil {
		return err
	}
	return r.apply(ctx, gwapplyv1.HTTPRoute(key.Name, key.Namespace).
		WithResourceVersion(route.ResourceVersion).
		WithAnnotations(map[string]string{AnnotationOriginalRules: original}).
		WithSpec(gwapplyv1.HTTPRouteSpec().WithRules(rulesAC...)), why)
}

// finalizeReference undoes what Sluice changed in the route (see restoredRules) and drops the
// AnnotationOriginalRules annotation; every edit the user made since adoption stays. A route without primary/canary backendRefs already holds the user's own rules (they
// re-applied them): only the annotation goes. The apply carries the route's resourceVersion (a
// Conflict means: retry).
func (r *Router) finalizeReference(ctx context.Context, canary *sluicev1.Canary, ref *sluicev1.RouteReference) error {
	key := types.NamespacedName{Namespace: canary.Namespace, Name: ref.Name}
	route, err := r.getRoute(ctx, key)
	if errors.Is(err, providers.ErrRouteNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	original, recorded := route.Annotations[AnnotationOriginalRules]
	if !recorded {
		return nil
	}
	if !servicesOf(canary).hasPairs(route.Spec.Rules) {
		return r.dropAnnotation(ctx, route)
	}
	var originalRules []gwv1.HTTPRouteRule
	if err := json.Unmarshal([]byte(original), &originalRules); err != nil {
		return fmt.Errorf("HTTPRoute %s: reading annotation %s: %w", key, AnnotationOriginalRules, err)
	}
	rulesAC, err := rulesApply(servicesOf(canary).restoredRules(route.Spec.Rules, originalRules))
	if err != nil {
		return err
	}
	// Leaving the annotation out of the apply removes it when Sluice is its only manager.
	applied := gwapplyv1.HTTPRoute(key.Name, key.Namespace).
		WithResourceVersion(route.ResourceVersion).
		WithSpec(gwapplyv1.HTTPRouteSpec().WithRules(rulesAC...))
	if err := r.apply(ctx, applied, "Restoring HTTPRoute rules"); err != nil {
		return err
	}
	if applied.ObjectMetaApplyConfiguration == nil {
		return nil
	}
	if _, left := applied.Annotations[AnnotationOriginalRules]; left { // another manager claimed it too
		return r.dropAnnotation(ctx, route)
	}
	return nil
}

// dropAnnotation removes AnnotationOriginalRules with a merge patch, which touches nothing else.
func (r *Router) dropAnnotation(ctx context.Context, route *gwv1.HTTPRoute) error {
	patched := route.DeepCopy()
	delete(patched.Annotations, AnnotationOriginalRules)
	if err := r.c.Patch(ctx, patched, client.MergeFrom(route), client.FieldOwner(providers.FieldManager)); err != nil {
		return fmt.Errorf("HTTPRoute %s: removing annotation %s: %w", client.ObjectKeyFromObject(route), AnnotationOriginalRules, err)
	}
	return nil
}

// restoredRules undoes Sluice's edits to rules and only those: A/B and session-affinity rules and
// the mirror and Set-Cookie filters go, and each primary/canary pair becomes the apex backendRef
// again. A managed rule whose backendRefs are still exactly what Sluice made of the recorded rule
// at the same index (split at the current weights) gets the recorded backendRefs back as written;
// one the user changed since (or after rules were added or removed) gets the unsplitRules
// reconstruction. Everything else in every rule (matches, filters, timeouts, names, and rules
// Sluice never managed) is kept as it is now, so edits made since adoption survive.
func (s services) restoredRules(rules, recorded []gwv1.HTTPRouteRule) []gwv1.HTTPRouteRule {
	current := s.withoutExtras(withoutABRules(rules))
	w, werr := s.readWeights(current, false)
	out := s.unsplitRules(current)
	for i, rule := range current {
		if !s.hasPairs([]gwv1.HTTPRouteRule{rule}) || werr != nil || i >= len(recorded) || !s.manages(recorded[i].BackendRefs) {
			continue
		}
		split, err := s.splitRule(recorded[i], w)
		if err != nil || !equality.Semantic.DeepEqual(split.BackendRefs, rule.BackendRefs) {
			continue
		}
		out[i].BackendRefs = recorded[i].BackendRefs
	}
	return out
}
