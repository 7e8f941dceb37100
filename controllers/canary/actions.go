package canary

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/log"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/canary/plan"
	"sluice.dev/sluice/providers"
)

// execute carries out a decision's actions in order on the objects obs read. It stops at the
// first error; the caller then keeps the old status, so the next tick decides again from the same
// state.
func (r *Reconciler) execute(ctx context.Context, canary *sluicev1.Canary, router providers.Router, obs *observation, d plan.Decision) error {
	target, primary := obs.target, obs.primary
	for _, a := range d.Actions {
		var err error
		switch a {
		case plan.ActionScaleCanaryUp:
			err = r.scaleCanaryUp(ctx, canary, target, primary)
		case plan.ActionScaleCanaryDown:
			if w := routedToCanary(ctx, router, canary); w > 0 {
				// Not an error: the next tick (idle phases keep the canary scaled down) does it
				// once the route reads 0, without a retry storm on a cache that lags our write.
				log.FromContext(ctx).Info("Canary scale-down deferred: the route still sends it traffic", "weight", w)
				continue
			}
			err = r.scaleCanaryDown(ctx, canary, target)
		case plan.ActionScalePrimaryUp:
			if n := primary.replicas(); n != nil && *n < d.PrimaryReplicas { // a DaemonSet runs on its nodes
				err = r.scale(ctx, primary, d.PrimaryReplicas)
			}
		case plan.ActionPromotePrimary:
			err = r.promotePrimary(ctx, canary, target, obs.targetTemplate, primary, obs.refs, d.Status.LastAppliedSpec)
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

// routedToCanary reads the route back and returns the weight it still sends the canary, checked
// before the canary scales down (the last action of a decision, after the route writes): a route
// write reported done that did not land (or is not visible yet) must not leave traffic on a canary
// without pods. A route that cannot be read (none yet) counts as 0.
func routedToCanary(ctx context.Context, router providers.Router, canary *sluicev1.Canary) int32 {
	w, err := router.GetRoutes(ctx, canary)
	if err != nil {
		return 0
	}
	return w.Canary
}
