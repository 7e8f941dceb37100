package canary

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/canary/plan"
	"sluice.dev/sluice/controllers/internal/reconcilekit"
	"sluice.dev/sluice/providers"
)

// reconcileRun runs the lifecycle step and turns its error into conditions: a stall (only a
// change to the spec or the cluster fixes it) is looked at again after one interval.
func (r *Reconciler) reconcileRun(ctx context.Context, tick *reconcilekit.Tick, canary *sluicev1.Canary) (ctrl.Result, error) {
	r.checkAlertProviders(ctx, tick, canary)
	res, err := r.step(ctx, tick, canary)
	return tick.Settle(res, stallPermanent(err), plan.Interval(canary.Spec))
}

// step is one tick of the lifecycle, in the shape both controllers share:
//
//  1. observe: validate the spec, read the target, its configs and the primary, converge the
//     Services and the route, read the route back and what holds the run (observe.go);
//  2. gather: resolve the due webhook gates and run the analysis when a check is due — side
//     effects that must not run twice, so only on a current Canary (gather.go);
//  3. decide: plan.Decide, pure;
//  4. apply: carry out the decision's actions, then take its status, conditions, metrics and
//     outbox (apply.go). The status patch and the outbox follow in Tick.End.
func (r *Reconciler) step(ctx context.Context, tick *reconcilekit.Tick, canary *sluicev1.Canary) (ctrl.Result, error) {
	obs, err := r.observe(ctx, tick, canary)
	if err != nil {
		return ctrl.Result{}, err
	}
	if wait, done, err := r.gather(ctx, tick, canary, obs); err != nil || !done {
		return wait, err
	}
	d := plan.Decide(obs.Observed)
	return r.apply(ctx, tick, canary, obs, d)
}

// stallPermanent turns a provider error that says the route or the spec can never work as it is
// (providers.IsPermanent, wherever in the tick it came from) into a stall with the provider's
// reason: retrying with backoff cannot fix it.
func stallPermanent(err error) error {
	if _, ok := reconcilekit.AsStalled(err); ok {
		return err
	}
	if reason, ok := providers.IsPermanent(err); ok {
		return reconcilekit.Stalled(reason, "%w", err)
	}
	return err
}
