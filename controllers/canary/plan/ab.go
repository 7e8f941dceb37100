package plan

import (
	"fmt"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// Event reasons of A/B runs.
const (
	EventABStarted        = "ABTestingStarted"
	EventIterationPassed  = "IterationPassed"
	EventABRoutesRestored = "ABRoutesRestored"
)

const (
	abRoutesOnDescription  = "requests matching analysis.match go to the canary, all others to the primary"
	abRoutesOffDescription = "every request follows the weights"
)

// IsAB reports whether the spec asks for A/B runs (Flagger's A/B testing): spec.analysis.match
// and spec.analysis.iterations are set. An A/B run uses no weights (the canary weight stays 0):
// once the canary is ready, requests matching spec.analysis.match go to the canary and all
// others to the primary; after iterations passing checks the canary is promoted, and failed
// checks reaching the threshold roll it back, as in a weighted run.
func IsAB(spec sluicev1.CanarySpec) bool {
	return len(spec.Analysis.Match) > 0 && spec.Analysis.Iterations > 0
}

// ABRouted reports whether, by status s, an A/B run routes the requests matching
// spec.analysis.match to the canary: from the first step of the run (taken once the canary is
// ready and the pre-rollout webhooks passed) while it is Progressing, WaitingPromotion or
// Promoting, until the promoted primary takes over (the run ends). The first step of an A/B run
// sets status.preRolloutPassed (also without pre-rollout webhooks: the gate before the first
// traffic passed), which is how the status remembers it; a new run resets it.
func ABRouted(spec sluicev1.CanarySpec, s sluicev1.CanaryStatus) bool {
	if !IsAB(spec) || !s.PreRolloutPassed {
		return false
	}
	switch s.Phase {
	case sluicev1.CanaryPhaseProgressing, sluicev1.CanaryPhaseWaitingPromotion, sluicev1.CanaryPhasePromoting:
		return true
	}
	return false
}

// trafficOn reports whether, by status s, the run is in its analysed steps: the A/B routing of an
// A/B run, the iterations of a blue/green run (at weight 0: the canary is analysed through load
// tests and mirrored traffic), a canary weight above 0 otherwise.
func trafficOn(spec sluicev1.CanarySpec, s sluicev1.CanaryStatus) bool {
	switch {
	case IsAB(spec):
		return ABRouted(spec, s)
	case IsBlueGreen(spec):
		return blueGreenStarted(spec, s)
	}
	return s.CanaryWeight > 0
}

// advanceAB takes the step of an A/B run after the pre-rollout gate or a passing check: the first
// step turns the A/B routing on; each later one counts a passing check (status.iterations), and
// once there are spec.analysis.iterations of them the run goes through the confirm-promotion gate
// to promotion.
func advanceAB(o Observed, d *Decision) {
	s := &d.Status
	n := o.Spec.Analysis.Iterations
	s.LastProgressTime = stamp(o.Now)
	s.LastStepTime = stepStamp(o)
	if o.Status.CanaryWeight != 0 { // the spec turned A/B during a weighted run
		d.setWeight(0)
	}
	if !ABRouted(o.Spec, o.Status) {
		s.PreRolloutPassed = true
		d.normal(EventABStarted, fmt.Sprintf("A/B testing of %s: %s, for %d checks", s.LastAppliedSpec, abRoutesOnDescription, n))
		return
	}
	if !iterationsDone(o, d, s, "A/B", n) {
		return
	}
	startPromotion(o, d)
}

// syncABRoutes turns the A/B routing on or off when this decision changes whether the run routes
// by match (see ABRouted), or when the route disagrees with the status (someone added or removed
// the A/B rules, or a write was lost). Turning it off comes before every other action, so the
// canary never scales down while matching requests still go to it; turning it on comes last, and
// only while the canary is ready.
func syncABRoutes(o Observed, d *Decision) {
	was, want := ABRouted(o.Spec, o.Status), ABRouted(o.Spec, d.Status)
	drifted := o.RouteABKnown && o.RouteABOn != want
	switch d.Status.Phase {
	case "", sluicev1.CanaryPhaseInitializing:
		drifted = false // the route is not ours to correct before initialization routes it
	}
	if was == want && !drifted {
		return
	}
	if want && !o.Canary.IsReady(CanaryReadyThreshold(o.Spec)) {
		return
	}
	if want {
		d.do(ActionABRoutesOn)
	} else {
		d.Actions = append([]Action{ActionABRoutesOff}, d.Actions...)
	}
	if was == want {
		state, now := "no A/B rules", abRoutesOnDescription
		if o.RouteABOn {
			state, now = "A/B rules", abRoutesOffDescription
		}
		d.warning(EventABRoutesRestored, fmt.Sprintf("Route had %s, restored: %s", state, now))
	}
}

// iterationsDone counts one more passed check of an A/B or blue/green run (label names the kind
// in the event) and reports whether the run may go on to promotion: all n checks passed and the
// confirm-promotion gate is open. Otherwise it records the wait.
func iterationsDone(o Observed, d *Decision, s *sluicev1.CanaryStatus, label string, n int32) bool {
	if s.Iterations < n {
		s.Iterations++
		d.normal(EventIterationPassed, fmt.Sprintf("%s check %d/%d passed", label, s.Iterations, n))
		if s.Iterations < n {
			return false
		}
	}
	if g, held := gate(o, sluicev1.WebhookConfirmPromotion); held {
		if !g.Pending { // no answer yet: the promotion waits, the check counted
			announceGateWait(o, d, sluicev1.WebhookConfirmPromotion, g)
		}
		return false
	}
	return true
}
