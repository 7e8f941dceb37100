package plan

import (
	"strings"
	"testing"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// TestStaleEndpointsHoldTheTakeOver (issue 17: the slices are read from a cache that may lag):
// slices from before the primary's rollout list the old revision's pods, as many and as ready as
// the new ones — counts a fresh read of the finished rollout would show too. Any serving pod of
// another ReplicaSet (Endpoints.OtherRevision) keeps the traffic on the canary, and the deadline
// message names them; the switch comes once the slices list the current ReplicaSet's pods alone.
func TestStaleEndpointsHoldTheTakeOver(t *testing.T) {
	holdsTakeOverWhileEndpointsLag(t, 3, []Endpoints{
		{Ready: 3, Serving: 3, OtherRevision: 3}, // the slices from before the rollout
		{Ready: 3, Serving: 3, OtherRevision: 2}, // half-way: two old pods, one new, all ready
		{Ready: 3, Serving: 3, OtherRevision: 1},
	}, func(t *testing.T, stale Endpoints, w *world) {
		o := w.observe()
		o.PrimaryEndpoints = &stale
		if lag := endpointsLag(o); !strings.Contains(lag, "of an older ReplicaSet") {
			t.Fatalf("endpoints %+v: deadline message %q does not name the older pods", stale, lag)
		}
	})
}

// TestEndpointWaitsPollOnlyUnwatchedSlices: the takeover and a rollback's return wait for lagging
// endpoints without polling when the controller watches their slices (Endpoints.Watched: a
// slice's change wakes the Canary), and poll every PollInterval when it does not (slices without
// the role label: a primary Service not relabelled yet).
func TestEndpointWaitsPollOnlyUnwatchedSlices(t *testing.T) {
	for _, watched := range []bool{false, true} {
		poll := func(d Decision) bool { return d.RequeueAfter == PollInterval }
		// The takeover.
		w := newWorld(seedSpec())
		w.analysis = passing
		w.primaryReplicas, w.canaryReplicas = 3, 3
		w.initialized(t)
		w.targetRevision = "rev-2"
		w.primaryEndpoints = &Endpoints{Ready: 3, Serving: 3, OtherRevision: 1, Watched: watched}
		var d Decision
		for i := 0; i < 100 && (w.status.Phase != sluicev1.CanaryPhasePromoting || w.primaryRevision != "rev-2"); i++ {
			d = w.tick(t)
		}
		d = w.tick(t)
		if w.status.Phase != sluicev1.CanaryPhasePromoting || w.routeWeight == 0 || poll(d) == watched {
			t.Fatalf("takeover, watched slices %t: %s at weight %d, next look in %s", watched, w.status.Phase, w.routeWeight, d.RequeueAfter)
		}
		// A rollback's return.
		w = newWorld(seedSpec())
		w.analysis = failingFrom(30)
		w.initialized(t)
		w.targetRevision = "rev-2"
		w.primaryEndpoints = &Endpoints{Ready: 1, Serving: 2, Watched: watched}
		for i := 0; i < 200 && w.status.Phase != sluicev1.CanaryPhaseFailed; i++ {
			d = w.tick(t)
		}
		d = w.tick(t)
		if w.status.Phase != sluicev1.CanaryPhaseFailed || w.routeWeight == 0 || poll(d) == watched {
			t.Fatalf("rollback, watched slices %t: %s at weight %d, next look in %s", watched, w.status.Phase, w.routeWeight, d.RequeueAfter)
		}
	}
}
