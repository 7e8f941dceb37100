package canary

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/canary/plan"
	"sluice.dev/sluice/providers"
)

// execute carries out a decision's actions in order. It stops at the first error; the caller then
// keeps the old status, so the next tick decides again from the same state.
func (r *Reconciler) execute(ctx context.Context, canary *sluicev1.Canary, router providers.Router,
	target, primary *appsv1.Deployment, refs []configRef, d plan.Decision) error {
	for _, a := range d.Actions {
		var err error
		switch a {
		case plan.ActionScaleCanaryUp:
			replicas := int32(1)
			if primary.Spec.Replicas != nil && *primary.Spec.Replicas > 0 {
				replicas = *primary.Spec.Replicas
			}
			err = r.scale(ctx, target, replicas)
		case plan.ActionScaleCanaryDown:
			err = r.scale(ctx, target, 0)
		case plan.ActionPromotePrimary:
			err = r.promotePrimary(ctx, canary, target, primary, refs, d.Status.LastAppliedSpec)
		case plan.ActionSetWeights:
			err = router.SetRoutes(ctx, canary, providers.CanaryWeight(d.Status.CanaryWeight))
		case plan.ActionRestorePrimary:
			err = r.restorePrimary(ctx, primary, d.Status.LastPromotedSpec)
		case plan.ActionABRoutesOn:
			err = router.SetABRoutes(ctx, canary, true)
		case plan.ActionABRoutesOff:
			err = router.SetABRoutes(ctx, canary, false)
		default:
			err = fmt.Errorf("unknown action %q", a)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", a, err)
		}
	}
	return nil
}
