// Package reconcilekit is the reconcile scaffolding both Sluice controllers share, so that each
// controller's package holds only its own observe → decide → act logic:
//
//   - Kit bundles the controller's client, event recorder, clock and the memory of its own status
//     writes; Kit.Now is the only source of time, Kit.Record the only way an event is emitted.
//   - Kit.Begin starts a Tick on an object read from the cache, unless the cache has not yet seen
//     this controller's last status write (deciding from it would repeat the last transition).
//   - Tick.End, deferred, writes the status once (a merge patch of the status subresource,
//     optimistically locked on the resourceVersion read at Begin; no request when nothing
//     changed) and only then delivers the tick's outbox: Kubernetes events, notifications and
//     any other side effect queued with Tick.Defer (event and post-rollout webhooks). A tick whose
//     patch conflicts is discarded whole and retried shortly: one event, one message per
//     transition.
//   - Tick.Settle turns the error of a tick's work into conditions: a StalledError (made by
//     Stalled) becomes Stalled=True/Ready=False with its reason and one warning event, any other
//     error Ready=False/ReconcileError and a retry with backoff; success clears Stalled.
//   - The condition setters (SetCondition, MarkStalled, ClearStalled, MarkSuspended, MarkWaiting,
//     SetSummary) work on any Object: a Sluice root type with status.conditions.
//
// A controller's Reconcile then reads:
//
//	obj := &sluicev1.Canary{}
//	if err := r.Get(ctx, req.NamespacedName, obj); err != nil { ... }
//	tick, ok := r.kit().Begin(obj)
//	if !ok {
//		return reconcilekit.StaleResult(), nil
//	}
//	defer func() { result, retErr = tick.End(ctx, result, retErr) }()
//	... deletion, finalizer, suspend ...
//	res, err := r.step(ctx, tick, obj) // observe → gather → decide → apply; events via tick.Event
//	return tick.Settle(res, err, retryWhenStalled)
package reconcilekit
