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
			err = r.scaleCanaryUp(ctx, canary, target, primary)
		case plan.ActionScaleCanaryDown:
			if err = routedAway(ctx, router, canary); err == nil {
				err = r.scaleCanaryDown(ctx, canary, target)
			}
		case plan.ActionScalePrimaryUp:
			if primary.Spec.Replicas == nil || *primary.Spec.Replicas < d.PrimaryReplicas {
				err = r.scale(ctx, primary, d.PrimaryReplicas)
			}
		case plan.ActionPromotePrimary:
			err = r.promotePrimary(ctx, canary, target, primary, refs, d.Status.LastAppliedSpec)
		case plan.ActionSetWeights:
			err = router.SetRoutes(ctx, canary, providers.CanaryWeight(d.Status.CanaryWeight))
		case plan.ActionRestorePrimary:
			err = r.restorePrimary(ctx, canary, primary, d.Status.LastPromotedSpec)
		case plan.ActionABRoutesOn:
			err = router.SetABRoutes(ctx, canary, true)
		case plan.ActionABRoutesOff:
			err = router.SetABRoutes(ctx, canary, false)
		case plan.ActionMirrorOn:
			err = router.SetMirror(ctx, canary, plan.MirrorWanted(canary.Spec, d.Status))
		case plan.ActionMirrorOff:
			err = router.SetMirror(ctx, canary, 0)
		case plan.ActionAffinityOn:
			err = router.SetSessionAffinity(ctx, canary, plan.AffinityCookie(canary.Spec, d.Status))
		case plan.ActionAffinityOff:
			err = router.SetSessionAffinity(ctx, canary, "")
		default:
			err = fmt.Errorf("unknown action %q", a)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", a, err)
		}
	}
	return nil
}

// routedAway confirms, by reading the route back, that it sends the canary no weight before the
// canary scales down (the last action of a decision, after the route writes): a route write that
// was reported done but did not land must not leave traffic on a canary without pods. A route that
// cannot be read (none yet) does not hold the scale-down.
func routedAway(ctx context.Context, router providers.Router, canary *sluicev1.Canary) error {
	w, err := router.GetRoutes(ctx, canary)
	if err != nil || w.Canary == 0 {
		return nil
	}
	return fmt.Errorf("the route still sends %d%% to the canary: its scale-down waits until the route is at 0", w.Canary)
}
