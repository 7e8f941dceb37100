package plan

import (
	"strings"
	"testing"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// TestTakeOverWaitsForPrimaryEndpoints (findings16 #7, every run kind that hands all traffic back
// to a promoted primary): the primary's Deployment reports its rollout complete (6 of 6 updated
// and ready), but the primary Service's EndpointSlices lag it — a ready pod not a ready endpoint
// yet, or an old-revision pod still an endpoint. The traffic stays on the canary until the
// endpoints show the rollout, then moves in one step.
func TestTakeOverWaitsForPrimaryEndpoints(t *testing.T) {
	holdsTakeOverWhileEndpointsLag(t, 6, []Endpoints{
		{Ready: 5, Serving: 6}, // a pod the Deployment counts ready is not a ready endpoint yet
		{Ready: 6, Serving: 7}, // a pod of the old revision is still an endpoint
		{Ready: 0, Serving: 0}, // the endpoints of a primary whose pods all changed
	}, nil)
}

// holdsTakeOverWhileEndpointsLag runs a blue/green and a weighted run (replicas pods on the primary
// and the canary) to Promoting with traffic on the canary; for each lagging read of the primary's
// endpoints, ten ticks keep the traffic where it is (then check, if set, looks at the world); once
// the endpoints show the rollout (replicas ready, none other) the run moves all traffic in one step.
func holdsTakeOverWhileEndpointsLag(t *testing.T, replicas int32, lags []Endpoints, check func(t *testing.T, lag Endpoints, w *world)) {
	t.Helper()
	for name, spec := range map[string]sluicev1.CanarySpec{"blue/green": blueGreenSpec(), "weighted": seedSpec()} {
		t.Run(name, func(t *testing.T) {
			w := newWorld(spec)
			w.analysis = passing
			w.primaryReplicas, w.canaryReplicas = replicas, replicas
			w.initialized(t)
			w.targetRevision = "rev-2"
			w.primaryEndpoints = &Endpoints{Ready: replicas, Serving: replicas}
			if len(lags) > 0 {
				w.primaryEndpoints = &lags[0]
			}
			for i := 0; i < 100 && w.status.Phase != sluicev1.CanaryPhasePromoting; i++ {
				w.tick(t)
			}
			carried := w.routeWeight
			if w.status.Phase != sluicev1.CanaryPhasePromoting || carried == 0 {
				t.Fatalf("not promoting with traffic on the canary: %s at weight %d", w.status.Phase, carried)
			}
			for _, lag := range lags {
				w.primaryEndpoints = &lag
				for i := 0; i < 10; i++ {
					w.tick(t)
					if w.routeWeight != carried || w.status.Phase != sluicev1.CanaryPhasePromoting {
						t.Fatalf("endpoints %+v: weight %d -> %d, phase %s", lag, carried, w.routeWeight, w.status.Phase)
					}
				}
				if check != nil {
					check(t, lag, w)
				}
			}
			w.primaryEndpoints = &Endpoints{Ready: replicas, Serving: replicas}
			for i := 0; i < 5 && w.status.Phase != sluicev1.CanaryPhaseSucceeded; i++ {
				w.tick(t)
			}
			if w.status.Phase != sluicev1.CanaryPhaseSucceeded || w.routeWeight != 0 || w.primaryRevision != "rev-2" {
				t.Fatalf("after the endpoints caught up: %s, weight %d, primary %s", w.status.Phase, w.routeWeight, w.primaryRevision)
			}
		})
	}
}

// TestRollbackReturnsTrafficOnceEndpointsServe: after a rollback the canary keeps its share until
// the primary's ready endpoints (not only its Deployment's ready count) can carry it.
func TestRollbackReturnsTrafficOnceEndpointsServe(t *testing.T) {
	w := newWorld(seedSpec())
	w.analysis = failingFrom(30)
	w.initialized(t)
	w.targetRevision = "rev-2"
	w.primaryEndpoints = &Endpoints{Ready: 1, Serving: 2} // one primary pod not an endpoint yet
	for i := 0; i < 200 && w.status.Phase != sluicev1.CanaryPhaseFailed; i++ {
		w.tick(t)
	}
	if w.status.Phase != sluicev1.CanaryPhaseFailed || w.routeWeight == 0 {
		t.Fatalf("want a failed run holding the canary's share, got %s at weight %d", w.status.Phase, w.routeWeight)
	}
	w.primaryEndpoints = &Endpoints{Ready: 2, Serving: 2}
	w.tick(t)
	if w.routeWeight != 0 {
		t.Fatalf("weight %d after the primary's endpoints caught up", w.routeWeight)
	}
}

// TestTakeOverWaitsForPrimaryAvailability: a primary whose new pods are ready but not yet
// available (the Deployment's minReadySeconds) has not finished its rollout, as the Deployment
// controller and Flagger's readiness check count it: the traffic stays on the canary.
func TestTakeOverWaitsForPrimaryAvailability(t *testing.T) {
	for name, spec := range map[string]sluicev1.CanarySpec{"blue/green": blueGreenSpec(), "weighted": seedSpec()} {
		t.Run(name, func(t *testing.T) {
			w := newWorld(spec)
			w.analysis = passing
			w.primaryReplicas, w.canaryReplicas = 6, 6
			w.initialized(t)
			w.targetRevision = "rev-2"
			for i := 0; i < 100 && w.status.Phase != sluicev1.CanaryPhasePromoting; i++ {
				w.tick(t)
			}
			carried := w.routeWeight
			w.primaryNotAvailable = 1
			for i := 0; i < 10; i++ {
				w.tick(t)
				if w.routeWeight != carried || w.status.Phase != sluicev1.CanaryPhasePromoting {
					t.Fatalf("one primary pod not available: weight %d -> %d, phase %s", carried, w.routeWeight, w.status.Phase)
				}
			}
			w.primaryNotAvailable = 0
			for i := 0; i < 5 && w.status.Phase != sluicev1.CanaryPhaseSucceeded; i++ {
				w.tick(t)
			}
			if w.status.Phase != sluicev1.CanaryPhaseSucceeded || w.routeWeight != 0 {
				t.Fatalf("after the pod became available: %s, weight %d", w.status.Phase, w.routeWeight)
			}
		})
	}
}

// TestTakeOverDeadlineNamesLaggingEndpoints: endpoints that never catch up end the promotion at
// the progress deadline with a rollback whose message names them.
func TestTakeOverDeadlineNamesLaggingEndpoints(t *testing.T) {
	w := newWorld(blueGreenSpec())
	w.analysis = passing
	w.initialized(t)
	w.targetRevision = "rev-2"
	for i := 0; i < 100 && w.status.Phase != sluicev1.CanaryPhasePromoting; i++ {
		w.tick(t)
	}
	w.primaryEndpoints = &Endpoints{Ready: 1, Serving: 2}
	var msg string
	for i := 0; i < 2000 && w.status.Phase == sluicev1.CanaryPhasePromoting; i++ {
		d := w.tick(t)
		for _, e := range d.Events {
			if e.Reason == EventDeadline {
				msg = e.Message
			}
		}
	}
	if w.status.Phase == sluicev1.CanaryPhasePromoting || !strings.Contains(msg, "1 ready endpoints") {
		t.Fatalf("phase %s, deadline message %q", w.status.Phase, msg)
	}
}
