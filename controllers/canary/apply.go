package canary

import (
	"context"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/canary/plan"
	"sluice.dev/sluice/providers"
)

// apply carries out a decision. Forward moves run their actions first and keep the new status only
// if every action succeeded (the deferred patch writes it); a lost status is recovered by the
// planner from the route and the primary. A decision that moves traffic back (d.StatusFirst:
// rollback, cancel, abort) writes its status first, then runs the actions: if one is lost, the
// next tick repairs it from the status, never moving traffic forward again.
func (r *Reconciler) apply(ctx context.Context, canary *sluicev1.Canary, router providers.Router, obs *observation,
	d plan.Decision, out *outbox) error {
	if d.StatusFirst {
		r.adopt(canary, obs, d, out)
		if err := r.commitStatus(ctx, canary, out); err != nil {
			return err
		}
		return r.execute(ctx, canary, router, obs.target, obs.primary, obs.refs, d)
	}
	if err := r.execute(ctx, canary, router, obs.target, obs.primary, obs.refs, d); err != nil {
		return err
	}
	r.adopt(canary, obs, d, out)
	return nil
}

// adopt makes d the Canary's status, with its conditions, metrics and queued notifications.
func (r *Reconciler) adopt(canary *sluicev1.Canary, obs *observation, d plan.Decision, out *outbox) {
	canary.Status = d.Status
	out.events = append(out.events, d.Events...)
	setPhaseConditions(canary, obs.o.Hold, d.Events)
	observeMetrics(canary, d.Events)
	queueNotifications(canary, d.Events, out)
}

// commitStatus writes the Canary's status now (instead of at the end of the tick) and makes it
// the base of the tick's deferred patch. errors: a conflict or an API error; nothing of the
// decision has happened then.
func (r *Reconciler) commitStatus(ctx context.Context, canary *sluicev1.Canary, out *outbox) error {
	if out.base == nil {
		return nil
	}
	if err := r.patchStatus(ctx, out.base, canary); err != nil {
		return err
	}
	*out.base = *canary.DeepCopy()
	return nil
}
