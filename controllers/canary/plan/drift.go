package plan

import (
	"fmt"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// restoreDriftedWeights puts the route back to the status weight when someone else changed it.
func restoreDriftedWeights(o Observed, d *Decision) {
	if !o.RouteKnown || o.RouteWeight == o.Status.CanaryWeight {
		return
	}
	switch o.Status.Phase {
	case "", sluicev1.CanaryPhaseInitializing:
		return // the route is not ours to correct before initialization routes it
	}
	if !o.Primary.Exists {
		return // initializing again: initialization routes it
	}
	// Someone else changed the weights since our last write: say so, and put ours back (unless
	// this tick writes new weights anyway).
	if !d.Has(ActionSetWeights) {
		d.setWeight(d.Status.CanaryWeight)
	}
	d.warning(EventWeightsDrift, fmt.Sprintf("Route had canary weight %d instead of %d (edited outside Sluice); set to %d",
		o.RouteWeight, o.Status.CanaryWeight, d.Status.CanaryWeight))
}
