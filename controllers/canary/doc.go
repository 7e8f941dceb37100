// Package canary is the Canary controller: the I/O around the pure lifecycle planner of package
// plan. One Reconcile is one tick, in a fixed order:
//
//  1. fetch the Canary from the cache (skip the tick if the cache has not seen our own last status
//     write yet);
//  2. defer one status patch (merge patch with an optimistic lock; no request when nothing
//     changed), after which the tick's events are recorded and its notifications sent;
//  3. deletion (revertOnDeletion: restore the target and the user's routing, then release the
//     finalizer), finalizer, suspend;
//  4. observe: target revision (pod template + tracked ConfigMaps/Secrets), Services, primary,
//     route weights, holds (progression windows, the cap on simultaneous runs), webhook gates
//     (polled in the background, never waited for), analysis when due;
//  5. plan.Decide, then carry out its actions in order (scale, promote, set weights); the new
//     status is kept only if every action succeeded.
//
// Every read goes through the manager's cache, so an idle Canary costs no API request.
package canary
