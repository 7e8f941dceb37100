package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/providers"
)

// ErrInvalidSpec means the Canary asks for something a Service selector cannot do: a split
// other than all-primary or all-canary, or routing by request. Retrying does not help.
var ErrInvalidSpec error = providers.Permanent(sluicev1.ReasonInvalidSpec, "not supported by the kubernetes provider")

// ErrSelectorDrift means the apex Service selects neither the primary's pods nor the canary's.
var ErrSelectorDrift = errors.New("apex Service selects neither the primary nor the canary")

// Router switches the apex Service between the primary and the canary.
type Router struct {
	c client.Client
}

var _ providers.Router = (*Router)(nil)

// New returns a Router reading and patching Services through c.
func New(c client.Client) *Router { return &Router{c: providers.ReadOwnWrites(c)} }

// services are the three Services of a Canary, as read.
type services struct {
	apex, primary, canary *corev1.Service
}

// read returns the Canary's three Services. errors: providers.ErrRouteNotFound (wrapped) naming
// the missing one, API errors.
func (r *Router) read(ctx context.Context, canary *sluicev1.Canary) (services, error) {
	names := canary.ServiceNames()
	var s services
	for _, x := range []struct {
		name string
		dst  **corev1.Service
	}{{names.Apex, &s.apex}, {names.Primary, &s.primary}, {names.Canary, &s.canary}} {
		svc := &corev1.Service{}
		key := types.NamespacedName{Namespace: canary.Namespace, Name: x.name}
		if err := r.c.Get(ctx, key, svc); err != nil {
			if apierrors.IsNotFound(err) {
				return s, fmt.Errorf("%w: Service %s", providers.ErrRouteNotFound, key)
			}
			return s, fmt.Errorf("reading Service %s: %w", key, err)
		}
		*x.dst = svc
	}
	return s, nil
}

// Reconcile checks that the apex, primary and canary Services exist; it writes nothing.
// errors: providers.ErrRouteNotFound (wrapped), API errors.
func (r *Router) Reconcile(ctx context.Context, canary *sluicev1.Canary) error {
	_, err := r.read(ctx, canary)
	return err
}

// SetRoutes points the apex Service at the primary's pods (canary weight 0) or the canary's
// (canary weight 100), writing only when its selector changes.
// errors: Weights.Validate errors, ErrInvalidSpec (wrapped) for any other split,
// providers.ErrRouteNotFound, API errors (a Conflict when the Service changed since it was read).
func (r *Router) SetRoutes(ctx context.Context, canary *sluicev1.Canary, w providers.Weights) error {
	if err := w.Validate(); err != nil {
		return err
	}
	s, err := r.read(ctx, canary)
	if err != nil {
		return err
	}
	var want map[string]string
	switch w.Canary {
	case 0:
		want = s.primary.Spec.Selector
	case providers.TotalWeight:
		want = s.canary.Spec.Selector
	default:
		return fmt.Errorf("%w: canary weight %d: a Service selects the primary (0) or the canary (%d), nothing in between",
			ErrInvalidSpec, w.Canary, providers.TotalWeight)
	}
	if len(want) == 0 {
		return fmt.Errorf("%w: Service %s/%s has no selector to copy", ErrInvalidSpec, canary.Namespace, nameOf(s, w))
	}
	if maps.Equal(s.apex.Spec.Selector, want) {
		return nil
	}
	patched := s.apex.DeepCopy()
	patched.Spec.Selector = maps.Clone(want)
	log.FromContext(ctx).Info("Switching the apex Service", "service", client.ObjectKeyFromObject(s.apex), "to", nameOf(s, w))
	patch := client.MergeFromWithOptions(s.apex, client.MergeFromWithOptimisticLock{})
	if err := r.c.Patch(ctx, patched, patch, client.FieldOwner(providers.FieldManager)); err != nil {
		return fmt.Errorf("switching Service %s to %s: %w", client.ObjectKeyFromObject(s.apex), nameOf(s, w), err)
	}
	return nil
}

func nameOf(s services, w providers.Weights) string {
	if w.Canary == 0 {
		return s.primary.Name
	}
	return s.canary.Name
}

// GetRoutes reads which pods the apex Service selects: the primary's (100/0) or the canary's
// (0/100). errors: ErrSelectorDrift (wrapped, naming the selectors) for anything else,
// providers.ErrRouteNotFound, API errors.
func (r *Router) GetRoutes(ctx context.Context, canary *sluicev1.Canary) (providers.Weights, error) {
	s, err := r.read(ctx, canary)
	if err != nil {
		return providers.Weights{}, err
	}
	switch sel := s.apex.Spec.Selector; {
	case len(sel) > 0 && maps.Equal(sel, s.primary.Spec.Selector):
		return providers.CanaryWeight(0), nil
	case len(sel) > 0 && maps.Equal(sel, s.canary.Spec.Selector):
		return providers.CanaryWeight(providers.TotalWeight), nil
	}
	return providers.Weights{}, fmt.Errorf("%w: Service %s/%s selects %v; %s selects %v, %s selects %v",
		ErrSelectorDrift, canary.Namespace, s.apex.Name, s.apex.Spec.Selector,
		s.primary.Name, s.primary.Spec.Selector, s.canary.Name, s.canary.Spec.Selector)
}

// SetABRoutes refuses to turn A/B routing on (a Service cannot route by request; CEL rejects
// analysis.match with this provider) and has nothing to turn off. errors: ErrInvalidSpec.
func (r *Router) SetABRoutes(_ context.Context, _ *sluicev1.Canary, on bool) error {
	if on {
		return fmt.Errorf("%w: A/B routing (spec.analysis.match)", ErrInvalidSpec)
	}
	return nil
}

// GetABRoutes reports false: there are no A/B routes.
func (r *Router) GetABRoutes(context.Context, *sluicev1.Canary) (bool, error) { return false, nil }

// Finalize has no route objects to remove.
func (r *Router) Finalize(context.Context, *sluicev1.Canary) error { return nil }

// SetMirror refuses to mirror (a Service cannot copy requests; CEL rejects analysis.mirror with
// this provider) and has nothing to turn off. errors: ErrInvalidSpec.
func (r *Router) SetMirror(_ context.Context, _ *sluicev1.Canary, percent int32) error {
	if percent != 0 {
		return fmt.Errorf("%w: mirroring (spec.analysis.mirror)", ErrInvalidSpec)
	}
	return nil
}

// GetMirror reports 0: nothing is mirrored.
func (r *Router) GetMirror(context.Context, *sluicev1.Canary) (int32, error) { return 0, nil }

// SetSessionAffinity refuses a cookie (a Service cannot route by request) and has nothing to
// turn off. errors: ErrInvalidSpec.
func (r *Router) SetSessionAffinity(_ context.Context, _ *sluicev1.Canary, cookie string) error {
	if cookie != "" {
		return fmt.Errorf("%w: session affinity (spec.analysis.sessionAffinity)", ErrInvalidSpec)
	}
	return nil
}

// GetSessionAffinity reports "": there is no cookie rule.
func (r *Router) GetSessionAffinity(context.Context, *sluicev1.Canary) (string, error) {
	return "", nil
}
