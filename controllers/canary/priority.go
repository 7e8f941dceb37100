package canary

import (
	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// Queue priority: under load, the runs nearest their end go first.
//
// When thousands of Canaries release at once (a shared ConfigMap change does that), the workers
// and the apiserver are the bottleneck and every due tick waits its turn. controller-runtime's
// priority queue (on by default) hands out the due ticks of a higher priority first. Each tick sets
// the priority of its Canary's next look from where the run stands:
//
//   - a run with failed checks, which may be rolling back: first, so a failing canary's traffic
//     returns to the primary soonest;
//   - a promotion (WaitingPromotion, Promoting, Finalising): next;
//   - Progressing: by the checks done, more first;
//   - anything else (initialization, a held run, idle): 0, the priority of a watch event.
//
// Every run does about the same work, so serving the runs with the least left first (shortest
// remaining first) finishes each run as early as the bottleneck allows instead of stretching all
// of them together; no run waits forever, as every run ahead of it ends. Without contention the
// queue holds nothing due and the order changes nothing. An event on a Canary already queued
// keeps the higher priority (the queue takes the maximum).
const (
	priorityFailing   = 1000
	priorityPromotion = 100
	// priorityProgressing is the priority of a run with no check done; each check adds one, up to
	// priorityPromotion − 1.
	priorityProgressing = 1
)

// nextLookPriority is the queue priority of c's next tick (c's status is what its tick wrote).
func nextLookPriority(c *sluicev1.Canary) int {
	switch c.Status.Phase {
	case sluicev1.CanaryPhaseProgressing, sluicev1.CanaryPhaseWaitingPromotion,
		sluicev1.CanaryPhasePromoting, sluicev1.CanaryPhaseFinalising:
	default:
		return 0
	}
	switch {
	case c.Status.FailedChecks > 0:
		return priorityFailing
	case c.Status.Phase != sluicev1.CanaryPhaseProgressing:
		return priorityPromotion
	default:
		return min(priorityProgressing+int(c.Status.Iterations), priorityPromotion-1)
	}
}
