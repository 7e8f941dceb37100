package plan

import (
	"fmt"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// Event reasons of blue/green runs.
const (
	EventBlueGreenStarted = "BlueGreenStarted"
	EventSwitched         = "TrafficSwitched"
)

// IsBlueGreen reports whether the spec asks for blue/green runs (Flagger's blue/green):
// spec.analysis.iterations without spec.analysis.match. The canary gets no traffic (a mirrored
// copy with spec.analysis.mirror; load tests reach it through its own Service) while
// spec.analysis.iterations checks pass; then all traffic switches to it at once (canary weight
// 100), the primary is promoted, and traffic switches back to the promoted primary. Failed checks
// reaching the threshold roll it back before the switch: the canary never served users.
func IsBlueGreen(spec sluicev1.CanarySpec) bool {
	return spec.Analysis.Iterations > 0 && len(spec.Analysis.Match) == 0
}

// blueGreenStarted reports whether, by status s, a blue/green run is in its analysed iterations
// or later: its first step (taken once the canary is ready and the pre-rollout webhooks passed)
// sets status.preRolloutPassed, as an A/B run's does.
func blueGreenStarted(spec sluicev1.CanarySpec, s sluicev1.CanaryStatus) bool {
	if !IsBlueGreen(spec) || !s.PreRolloutPassed {
		return false
	}
	switch s.Phase {
	case sluicev1.CanaryPhaseProgressing, sluicev1.CanaryPhaseWaitingPromotion, sluicev1.CanaryPhasePromoting:
		return true
	}
	return false
}

// countsPassingChecks reports whether status.iterations counts passing checks (A/B and
// blue/green runs) rather than every check (weighted runs).
func countsPassingChecks(spec sluicev1.CanarySpec) bool { return IsAB(spec) || IsBlueGreen(spec) }

// advanceBlueGreen takes the step of a blue/green run after the pre-rollout gate or a passing
// check: the first step starts the analysed iterations at weight 0; each later one counts a
// passing check, and once there are spec.analysis.iterations of them the run goes through the
// confirm-promotion gate, switches all traffic to the canary and starts the promotion.
func advanceBlueGreen(o Observed, d *Decision) {
	s := &d.Status
	n := o.Spec.Analysis.Iterations
	s.LastProgressTime = stamp(o.Now)
	s.LastStepTime = stamp(o.Now)
	if !blueGreenStarted(o.Spec, o.Status) {
		if o.Status.CanaryWeight != 0 { // the spec turned blue/green during a weighted run
			d.setWeight(0)
		}
		s.PreRolloutPassed = true
		d.normal(EventBlueGreenStarted, fmt.Sprintf("Blue/green run of %s: the canary gets no traffic%s for %d checks, then all of it at once",
			s.LastAppliedSpec, mirrorDescription(o.Spec), n))
		return
	}
	if !iterationsDone(o, d, s, "Blue/green", n) {
		return
	}
	d.setWeight(100)
	d.normal(EventSwitched, fmt.Sprintf("All traffic switched to the canary %s", s.LastAppliedSpec))
	startPromotion(o, d)
}

func mirrorDescription(spec sluicev1.CanarySpec) string {
	if !spec.Analysis.Mirror {
		return ""
	}
	return fmt.Sprintf(" but a mirrored copy of %d%% of the requests", MirrorWeight(spec))
}

// MirrorWeight is the percentage of requests mirrored to the canary (default 100).
func MirrorWeight(spec sluicev1.CanarySpec) int32 {
	if spec.Analysis.MirrorWeight > 0 {
		return spec.Analysis.MirrorWeight
	}
	return 100
}
