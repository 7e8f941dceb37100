package plan

import (
	"fmt"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// A tick writes forward moves (a weight step, the promotion of the primary) before its status, so
// a lost status write (a conflict, a crash between the two writes) leaves the route or the primary
// one step ahead of the status. The planner compares what it observes with the status and
// continues from the route and the primary instead of moving traffic backwards and repeating the
// check that already passed. Backward moves (rollback) write the status first: see StatusFirst.

// lostWrite reports whether the observed route or primary is one forward move ahead of the status
// of a run in flight, the trace of a lost status write.
func lostWrite(o Observed) bool {
	switch o.Status.Phase {
	case sluicev1.CanaryPhaseProgressing, sluicev1.CanaryPhaseWaitingPromotion:
	default:
		return false
	}
	if o.Revision != o.Status.LastAppliedSpec {
		return false
	}
	return promotionWritten(o) || nextStepWritten(o)
}

// promotionWritten: the primary already runs the run's revision, which the status has not
// promoted yet.
func promotionWritten(o Observed) bool {
	return o.Primary.Exists && o.Primary.Revision == o.Status.LastAppliedSpec && o.Status.LastAppliedSpec != o.Status.LastPromotedSpec
}

// nextStepWritten: the route holds the weight of the step after the status's, on a ready canary.
// A/B and blue/green runs have no such step: their traffic moves only with the promotion (which
// promotionWritten recognises by the primary), so a canary weight found on their route during the
// analysed iterations is someone else's (e.g. a GitOps tool re-applying the Service or route as
// it is in Git) and is put back, never adopted as progress the checks did not make.
func nextStepWritten(o Observed) bool {
	if IsAB(o.Spec) || IsBlueGreen(o.Spec) || !o.RouteKnown || !o.Canary.IsReady(CanaryReadyThreshold(o.Spec)) {
		return false
	}
	next, ok := NextWeight(Steps(o.Spec.Analysis), o.Status.CanaryWeight)
	return ok && o.RouteWeight == next
}

// recoverLostWrites continues a run from the forward move its last tick wrote but whose status
// was lost, and reports whether it did: the promotion of the primary (the run moves on to
// Promoting; no check runs again), or the next weight step (the check that led to it passed; it
// is counted, not repeated).
func recoverLostWrites(o Observed, d *Decision) bool {
	s := &d.Status
	switch {
	case promotionWritten(o):
		// The promotion followed a passing check (the last step's, or the last A/B iteration).
		switch {
		case IsAB(o.Spec):
			s.Iterations = max(s.Iterations, o.Spec.Analysis.Iterations)
		case o.Status.CanaryWeight > 0:
			s.Iterations++
		}
		d.setPhase(sluicev1.CanaryPhasePromoting, o.Now)
		s.LastProgressTime = stamp(o.Now)
		d.RequeueAfter = PollInterval
		d.warning(EventWriteRecovered, fmt.Sprintf("The primary already runs %s (the status of its promotion was lost): continuing the promotion",
			o.Status.LastAppliedSpec))
		return true
	case nextStepWritten(o):
		from := o.Status.CanaryWeight
		if from > 0 {
			s.Iterations++ // the check that led to the step passed
			if o.Spec.Analysis.FailedChecksMode == "Consecutive" {
				s.FailedChecks = 0
			}
		}
		s.PreRolloutPassed = true
		s.ConsecutiveErrors = 0
		s.CanaryWeight = o.RouteWeight
		s.LastStepTime = stamp(o.Now)
		s.LastProgressTime = stamp(o.Now)
		d.warning(EventWriteRecovered, fmt.Sprintf("The route already has canary weight %d, the step after %d (the status of that step was lost): continuing from %d",
			o.RouteWeight, from, o.RouteWeight))
		return true
	}
	return false
}

// restoreDriftedWeights puts the route back to the status weight when it differs: someone else
// changed it, or an action of an earlier tick was lost. It never routes weight to a canary below
// its ready threshold, and during a promotion it keeps a route that already sends more to the
// promoted primary (a lost status of a promotion step).
func restoreDriftedWeights(o Observed, d *Decision) {
	if !o.RouteKnown || o.RouteWeight == o.Status.CanaryWeight || o.RouteWeight == d.Status.CanaryWeight {
		return
	}
	switch d.Status.Phase {
	case "", sluicev1.CanaryPhaseInitializing:
		return // the route is not ours to correct before initialization routes it
	}
	switch o.Status.Phase {
	case "", sluicev1.CanaryPhaseInitializing:
		// This tick initializes: the route is still the user's (provider kubernetes: the apex
		// Service still selects the target's pods, which reads as canary 100) and initialize
		// routes it to the primary. Adoption, not drift: no warning.
		if !d.Has(ActionSetWeights) {
			d.setWeight(d.Status.CanaryWeight)
		}
		return
	}
	if d.Status.Phase == sluicev1.CanaryPhasePromoting && o.Status.Phase == sluicev1.CanaryPhasePromoting &&
		o.RouteWeight < d.Status.CanaryWeight && o.Primary.Revision == o.Status.LastAppliedSpec {
		d.Status.CanaryWeight = o.RouteWeight
		d.warning(EventWriteRecovered, fmt.Sprintf("The route already sends %d%% to the promoted primary (the status of that step was lost): continuing from canary weight %d",
			100-o.RouteWeight, o.RouteWeight))
		return
	}
	want := d.Status.CanaryWeight
	if !d.Has(ActionSetWeights) {
		if want > 0 && !o.Canary.IsReady(CanaryReadyThreshold(o.Spec)) {
			want = 0
		}
		d.setWeight(want)
	}
	d.warning(EventWeightsDrift, fmt.Sprintf("Route had canary weight %d instead of %d (an edit outside Sluice or a lost write); set to %d",
		o.RouteWeight, o.Status.CanaryWeight, want))
}
