package canary

import (
	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// Queue priority: under load, the checks of live canaries go first.
//
// When thousands of Canaries release at once (a shared ConfigMap change does that), the workers
// and the apiserver are the bottleneck and every due tick waits its turn. controller-runtime's
// priority queue (on by default) hands out the due ticks of a higher priority first. Each tick sets
// the priority of its Canary's next look from where the run stands:
//
//   - a run with failed checks, which may be rolling back: first, so a failing canary's traffic
//     returns to the primary soonest;
//   - a live canary: a run whose checks have begun (traffic on the canary, a check done, the
//     promotion), so the checks that guard users' traffic keep their interval;
//   - a run starting (waiting for the canary's pods, no traffic on it yet);
//   - an initialization under way (its primary created, waiting for its pods): when a thousand
//     Canaries are created at once, each finishes as soon as its primary is ready instead of
//     after every other Canary's first tick, so they become Initialized as their primaries come
//     up, not all at the end;
//   - anything else (a new Canary's first tick, a held run, idle): 0, the priority of a watch
//     event, so a new run starts in the gaps the runs ahead of it leave.
//
// Within a level the queue is first come, first served. No tick waits forever: the runs ahead of
// it end. Without contention the queue holds nothing due and the order changes nothing. An event
// on a Canary already queued keeps the higher priority (the queue takes the maximum): the watch
// event of a primary that became ready wakes its Canary at the priority of its next look.
const (
	priorityFailing      = 4
	priorityLiveCanary   = 3
	priorityRunStarting  = 2
	priorityInitializing = 1
	priorityOutsideARun  = 0
)

// nextLookPriority is the queue priority of c's next tick (c's status is what its tick wrote).
func nextLookPriority(c *sluicev1.Canary) int {
	s := c.Status
	switch {
	case s.Phase == sluicev1.CanaryPhaseInitializing:
		return priorityInitializing
	case !runningPhases[s.Phase]:
		return priorityOutsideARun
	case s.FailedChecks > 0:
		return priorityFailing
	case s.Phase == sluicev1.CanaryPhaseProgressing && s.CanaryWeight == 0 && s.Iterations == 0:
		return priorityRunStarting
	default:
		return priorityLiveCanary
	}
}
