// Package canary is the Canary controller: the I/O around the pure lifecycle planner of package
// plan, on the shared reconcile scaffolding (controllers/internal/reconcilekit). One Reconcile is
// one tick, in a fixed order:
//
//  1. fetch the Canary from the cache (skip the tick if the cache has not seen our own last status
//     write yet);
//  2. defer one status patch (merge patch with an optimistic lock; no request when nothing
//     changed), after which the tick's events are recorded and its notifications sent;
//  3. deletion (the deletion sub-machine below), finalizer, suspend;
//  4. observe (observe.go): target revision (pod template + tracked ConfigMaps/Secrets), primary
//     (created from the target at first), Services (the apex Service moves to the primary only
//     once the primary is ready; a takeover is announced and the original kept), route (reconciled
//     once the primary is ready), holds (progression windows, the cap on simultaneous runs). A
//     problem only a change fixes stops the tick before a run; during a run it becomes the
//     planner's Stall, so checks continue and the progress deadline ends the run;
//  5. gather (gather.go): webhook gates (polled in the background, never waited for; answers
//     recorded in status) and the analysis when due (once per round);
//  6. decide: plan.Decide;
//  7. apply (apply.go): forward moves run their actions first and the status is kept only if every
//     action succeeded; moves back to the primary (rollback, cancel, abort) write the status first
//     (Tick.Commit), then the actions. Either way a lost write is repaired by a later tick.
//
// Deletion sub-machine (finalize.go), outside the planner because it only undoes: Terminating
// (event) → with revertOnDeletion: scale the target back up, wait until it is ready, restore the
// apex Service exactly as the user had it and the user's routing, remove the primary objects;
// without it: orphan the primary objects, which keep serving → Terminated → finalizer released.
//
// Every read goes through the manager's cache, so an idle Canary costs no API request.
package canary
