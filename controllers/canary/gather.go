package canary

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/canary/plan"
	"sluice.dev/sluice/controllers/internal/reconcilekit"
)

// gather resolves what the planner needs from outside the cluster before it decides: the due
// webhook gates and, when a check is due, the analysis. Both are side effects that must not run
// twice, so they run only on a Canary the cache holds current. It reports done=false, with the
// result to return, when the tick must stop here and look again (a stale cache, a gate call in
// flight). errors: stalled when the analysis cannot run at all.
func (r *Reconciler) gather(ctx context.Context, tick *reconcilekit.Tick, canary *sluicev1.Canary, obs *observation) (ctrl.Result, bool, error) {
	gatesDue := len(plan.GatesDue(obs.Observed)) > 0
	analysisDue := plan.AnalysisDue(obs.Observed)
	if !gatesDue && !analysisDue {
		return ctrl.Result{}, true, nil
	}
	if stale, err := tick.Kit().IsStale(ctx, canary); err != nil || stale {
		return reconcilekit.StaleResult(), false, err
	}
	if gatesDue {
		gates, pending := r.resolveGates(canary, obs.Observed)
		if pending {
			return ctrl.Result{RequeueAfter: gatePoll}, false, nil
		}
		obs.Gates = gates
	}
	if analysisDue && len(canary.Spec.Analysis.Metrics) == 0 {
		obs.Check = &plan.Check{} // no metrics to hold the run: every step passes (validate requires an analyzer otherwise)
	} else if analysisDue {
		check, err := r.Analyzer.Evaluate(ctx, canary, obs.Now)
		if ctx.Err() != nil {
			return ctrl.Result{}, false, ctx.Err()
		}
		if err != nil {
			return ctrl.Result{}, false, reconcilekit.Stalled(sluicev1.ReasonInvalidSpec, "analysis: %w", err)
		}
		obs.Check = &plan.Check{Failed: check.Failed(), Summary: check.Summary(), Results: check.Results}
	}
	return ctrl.Result{}, true, nil
}
