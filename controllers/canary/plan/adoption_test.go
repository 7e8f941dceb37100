package plan

import (
	"testing"
	"time"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// TestInitializationAdoptsRouteWithoutDriftWarning: provider kubernetes before adoption, the apex
// Service still selects the target's pods, which reads as canary weight 100. The tick that
// initializes routes everything to the primary (weight 0) and says so, with no WeightsRestored
// warning: adopting the user's Service is not an outside edit. A route found at 100 once
// initialized still is one.
func TestInitializationAdoptsRouteWithoutDriftWarning(t *testing.T) {
	spec := sluicev1.CanarySpec{Provider: sluicev1.ProviderKubernetes, Analysis: sluicev1.CanaryAnalysis{Iterations: 3, Interval: "1m"}}
	ready := Workload{Exists: true, Revision: "rev1", Desired: 3, Ready: 3, Updated: 3, RolledOut: true}
	o := Observed{Now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Spec: spec,
		Status:  sluicev1.CanaryStatus{Phase: sluicev1.CanaryPhaseInitializing},
		Primary: ready, Canary: ready, Revision: "rev1", RouteKnown: true, RouteWeight: 100}
	d := Decide(o)
	if d.Status.Phase != sluicev1.CanaryPhaseInitialized || !d.Has(ActionSetWeights) || d.Status.CanaryWeight != 0 {
		t.Fatalf("phase %s, actions %v, weight %d: want Initialized setting weight 0", d.Status.Phase, d.Actions, d.Status.CanaryWeight)
	}
	for _, e := range d.Events {
		if e.Reason == EventWeightsDrift {
			t.Fatalf("adoption reported as drift: %s", e.Message)
		}
	}

	o.Status = d.Status
	d = Decide(o)
	drift := false
	for _, e := range d.Events {
		drift = drift || e.Reason == EventWeightsDrift
	}
	if !drift || !d.Has(ActionSetWeights) {
		t.Fatalf("a route at 100 after initialization is not restored with a warning: %+v %v", d.Events, d.Actions)
	}
}
