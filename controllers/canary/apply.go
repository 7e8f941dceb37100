package canary

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/canary/plan"
	"sluice.dev/sluice/controllers/internal/reconcilekit"
	"sluice.dev/sluice/providers"
)

// apply carries out the decision's actions in order and, when every one succeeded, takes its
// status, derives the conditions and metrics, and queues its events, hooks and notifications in
// the tick's outbox. At the first failing action it stops and keeps the old status, so the next
// tick decides again from the same state.
func (r *Reconciler) apply(ctx context.Context, tick *reconcilekit.Tick, canary *sluicev1.Canary, obs *observation, d plan.Decision) (ctrl.Result, error) {
	for _, a := range d.Actions {
		if err := r.do(ctx, canary, obs, a, d.Status); err != nil {
			return ctrl.Result{}, fmt.Errorf("%s: %w", a, err)
		}
	}
	canary.Status = d.Status
	tick.Event(d.Events...)
	hold := d.Hold
	if hold == nil {
		hold = obs.Hold
	}
	setPhaseConditions(canary, hold, d.Events)
	observeMetrics(canary, d.Events)
	r.queueHooks(tick, canary, d.Events)
	r.queueNotifications(tick, canary, d.Events)
	return ctrl.Result{RequeueAfter: d.RequeueAfter}, nil
}

// do carries out one action of the lifecycle; next is the status the decision leads to.
func (r *Reconciler) do(ctx context.Context, canary *sluicev1.Canary, obs *observation, a plan.Action, next sluicev1.CanaryStatus) error {
	switch a {
	case plan.ActionCreatePrimary:
		return r.createPrimary(ctx, canary, obs.target, obs.refs, obs.Revision)
	case plan.ActionScaleCanaryUp:
		return r.scale(ctx, obs.target, replicasOf(obs.primary))
	case plan.ActionScaleCanaryDown:
		return r.scale(ctx, obs.target, 0)
	case plan.ActionPromotePrimary:
		return r.promotePrimary(ctx, canary, obs.target, obs.primary, obs.refs, next.LastAppliedSpec)
	case plan.ActionSetWeights:
		return obs.router.SetRoutes(ctx, canary, providers.CanaryWeight(next.CanaryWeight))
	case plan.ActionABRoutesOn:
		return obs.router.SetABRoutes(ctx, canary, true)
	case plan.ActionABRoutesOff:
		return obs.router.SetABRoutes(ctx, canary, false)
	}
	return fmt.Errorf("unknown action %q", a)
}

// replicasOf is a Deployment's replica count, at least 1 (a missing primary counts as 1).
func replicasOf(d *appsv1.Deployment) int32 {
	if d != nil && d.Spec.Replicas != nil && *d.Spec.Replicas > 0 {
		return *d.Spec.Replicas
	}
	return 1
}
