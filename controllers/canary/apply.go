package canary

import (
	"context"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/canary/plan"
	"sluice.dev/sluice/controllers/internal/reconcilekit"
	"sluice.dev/sluice/providers"
)

// apply carries out a decision. Forward moves run their actions first and keep the new status only
// if every action succeeded (the tick's deferred patch writes it); a lost status is recovered by
// the planner from the route and the primary. A decision that moves traffic back (d.StatusFirst:
// rollback, cancel, abort) writes its status first (Tick.Commit), then runs the actions: if one
// is lost, the next tick repairs it from the status, never moving traffic forward again.
func (r *Reconciler) apply(ctx context.Context, tick *reconcilekit.Tick, canary *sluicev1.Canary, router providers.Router,
	obs *observation, d plan.Decision) error {
	if d.StatusFirst {
		r.adopt(tick, canary, obs, d)
		if err := tick.Commit(ctx); err != nil {
			return err
		}
		return r.execute(ctx, canary, router, obs, d)
	}
	if err := r.execute(ctx, canary, router, obs, d); err != nil {
		return err
	}
	r.adopt(tick, canary, obs, d)
	return nil
}

// adopt makes d the Canary's status, with its conditions, metrics and run history, and queues its events,
// hooks and notifications in the tick's outbox.
func (r *Reconciler) adopt(tick *reconcilekit.Tick, canary *sluicev1.Canary, obs *observation, d plan.Decision) {
	canary.Status = d.Status
	recordHistory(canary, obs, d)
	tick.Event(d.Events...)
	hold := obs.o.Hold
	if d.Status.Phase == sluicev1.CanaryPhaseInitializing {
		hold = obs.o.MetricsWait
		if d.Waiting != nil {
			hold = d.Waiting
		}
	}
	setPhaseConditions(canary, hold, unreadyCanary(canary, obs.o), d.Events)
	observeMetrics(canary, d.Events)
	r.queueHooks(tick, canary, d.Events)
	r.queueNotifications(tick, canary, d.Events)
}
