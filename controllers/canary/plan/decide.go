package plan

import (
	"fmt"
	"time"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// Event reasons recorded by Decide.
const (
	EventInitialized   = "Initialized"
	EventNewRevision   = "NewRevision"
	EventRestarted     = "RunRestarted"
	EventWaiting       = "Waiting"
	EventAdvanced      = "WeightAdvanced"
	EventCheckFailed   = "CheckFailed"
	EventRollback      = "RolledBack"
	EventPromoting     = "Promoting"
	EventFinalising    = "Finalising"
	EventSucceeded     = "Succeeded"
	EventWeightsDrift  = "WeightsRestored"
	EventDeadline      = "ProgressDeadlineExceeded"
	EventRevisionMatch = "RevisionMatchesPrimary"
	EventRunCancelled  = "RunCancelled"
	EventRequest       = "RequestHandled"
)

// Decide returns the next step of the Canary's lifecycle for what was observed in one tick.
func Decide(o Observed) Decision {
	d := Decision{Status: *o.Status.DeepCopy(), RequeueAfter: Interval(o.Spec)}
	if !handleRequests(o, &d) {
		switch o.Status.Phase {
		case "", sluicev1.CanaryPhaseInitializing:
			initialize(o, &d)
		case sluicev1.CanaryPhaseInitialized, sluicev1.CanaryPhaseSucceeded, sluicev1.CanaryPhaseFailed:
			idle(o, &d)
		case sluicev1.CanaryPhaseWaiting:
			waiting(o, &d)
		case sluicev1.CanaryPhaseProgressing, sluicev1.CanaryPhaseWaitingPromotion:
			progress(o, &d)
		case sluicev1.CanaryPhasePromoting:
			promote(o, &d)
		case sluicev1.CanaryPhaseFinalising:
			finalise(o, &d)
		default:
			// Terminating/Terminated are handled by the controller's deletion path.
		}
	}
	restoreDriftedWeights(o, &d)
	syncABRoutes(o, &d)
	return d
}

// initialize waits for the primary to become ready, then routes everything to it and scales the
// target down.
func initialize(o Observed, d *Decision) {
	d.setPhase(sluicev1.CanaryPhaseInitializing, o.Now)
	if !o.Primary.IsReady(PrimaryReadyThreshold(o.Spec)) {
		d.RequeueAfter = PollInterval
		return
	}
	d.setWeight(0)
	d.do(ActionScaleCanaryDown)
	d.Status.LastAppliedSpec = o.Primary.Revision
	d.Status.LastPromotedSpec = o.Primary.Revision
	d.Status.TrackedConfigs = o.TrackedConfigs
	d.setPhase(sluicev1.CanaryPhaseInitialized, o.Now)
	d.normal(EventInitialized, fmt.Sprintf("Initialization done: primary %s ready, all traffic on the primary", o.Primary.Revision))
}

// idle watches for a new revision while no run is in flight and keeps the target scaled down.
func idle(o Observed, d *Decision) {
	switch o.Revision {
	case o.Status.LastAppliedSpec:
		if o.Canary.Desired > 0 {
			d.do(ActionScaleCanaryDown)
		}
	case o.Status.LastPromotedSpec:
		// The target went back to what the primary runs: nothing to deliver.
		d.Status.LastAppliedSpec = o.Revision
		d.Status.TrackedConfigs = o.TrackedConfigs
		d.normal(EventRevisionMatch, fmt.Sprintf("Revision %s is what the primary runs; no canary run", o.Revision))
		if o.Canary.Desired > 0 {
			d.do(ActionScaleCanaryDown)
		}
	default:
		newRun(o, d)
	}
}

// waiting holds a due run until nothing holds it any more.
func waiting(o Observed, d *Decision) {
	switch o.Revision {
	case o.Status.LastPromotedSpec:
		// Back to what the primary runs: nothing to deliver.
		d.setPhase(sluicev1.CanaryPhaseSucceeded, o.Now)
		idle(o, d)
	case o.Status.LastAppliedSpec:
		// Back to the revision whose run failed: it stays failed until it changes or is retried.
		d.setPhase(sluicev1.CanaryPhaseFailed, o.Now)
		idle(o, d)
	default:
		newRun(o, d)
	}
}

// newRun starts a run of o.Revision unless something holds it.
func newRun(o Observed, d *Decision) {
	if o.Hold != nil {
		if d.Status.Phase != sluicev1.CanaryPhaseWaiting {
			d.normal(EventWaiting, fmt.Sprintf("New revision %s waits: %s", o.Revision, o.Hold.Message))
		}
		d.setPhase(sluicev1.CanaryPhaseWaiting, o.Now)
		d.RequeueAfter = holdRequeue(o)
		return
	}
	if g, held := gate(o, sluicev1.WebhookConfirmRollout); held {
		if d.Status.Phase != sluicev1.CanaryPhaseWaiting {
			d.warning(EventWaitingAtGate, fmt.Sprintf("New revision %s waits at the confirm-rollout gate: %s", o.Revision, g.Message))
		}
		d.setPhase(sluicev1.CanaryPhaseWaiting, o.Now)
		return
	}
	if o.Spec.SkipAnalysis {
		startRun(o, d)
		d.normal(EventNewRevision, fmt.Sprintf("New revision %s detected; skipAnalysis set, promoting", o.Revision))
		startPromotion(o, d)
		return
	}
	startRun(o, d)
	d.normal(EventNewRevision, fmt.Sprintf("New revision %s detected, starting canary analysis", o.Revision))
}

// startRun resets the run's progress and scales the canary up at weight 0.
func startRun(o Observed, d *Decision) {
	s := &d.Status
	s.LastAppliedSpec = o.Revision
	s.TrackedConfigs = o.TrackedConfigs
	s.FailedChecks = 0
	s.Iterations = 0
	s.PreRolloutPassed = false
	s.Analysis = nil
	s.Notifications = nil
	s.LastStepTime = nil
	s.LastProgressTime = stamp(o.Now)
	s.RunStartTime = stamp(o.Now)
	d.setWeight(0)
	d.do(ActionScaleCanaryUp)
	d.setPhase(sluicev1.CanaryPhaseProgressing, o.Now)
	d.RequeueAfter = PollInterval
}

// progress runs the analysis steps: check, then take the next step (a weight, or for an A/B run
// see advanceAB) or count a failed check.
func progress(o Observed, d *Decision) {
	if o.Revision != o.Status.LastAppliedSpec && o.Revision == o.Status.LastPromotedSpec {
		cancelRun(o, d)
		return
	}
	if o.Revision != o.Status.LastAppliedSpec {
		restart := "restarting from weight 0"
		if IsAB(o.Spec) {
			restart = "restarting the A/B test"
		}
		d.warning(EventRestarted, fmt.Sprintf("New revision %s during the run of %s; %s", o.Revision, o.Status.LastAppliedSpec, restart))
		startRun(o, d)
		return
	}
	if rolledBack(o, d) {
		return
	}
	on := trafficOn(o.Spec, o.Status)
	if wait, ok := stepBlocked(o); ok {
		d.RequeueAfter = wait
		if o.Hold != nil && !on && !o.Canary.IsReady(CanaryReadyThreshold(o.Spec)) {
			d.RequeueAfter = PollInterval
		}
		return
	}
	if !on && !preRolloutPassed(o, d) {
		return
	}
	if on && !checkPassed(o, d) {
		return
	}
	if IsAB(o.Spec) {
		advanceAB(o, d)
		return
	}
	s := &d.Status
	s.LastProgressTime = stamp(o.Now)
	s.LastStepTime = stamp(o.Now)
	next, ok := NextWeight(Steps(o.Spec.Analysis), o.Status.CanaryWeight)
	if !ok {
		if g, held := gate(o, sluicev1.WebhookConfirmPromotion); held {
			if o.Status.Phase != sluicev1.CanaryPhaseWaitingPromotion {
				d.warning(EventWaitingAtGate, "Waiting at the confirm-promotion gate: "+g.Message)
			}
			d.setPhase(sluicev1.CanaryPhaseWaitingPromotion, o.Now)
			return
		}
		startPromotion(o, d)
		return
	}
	if g, held := gate(o, sluicev1.WebhookConfirmTrafficIncrease); held {
		d.warning(EventWaitingAtGate, fmt.Sprintf("Weight %d waits at the confirm-traffic-increase gate: %s", next, g.Message))
		return
	}
	d.setWeight(next)
	d.normal(EventAdvanced, fmt.Sprintf("Advance canary weight to %d", next))
}

// preRolloutPassed resolves the pre-rollout gate before the first traffic of a run and reports
// whether the run may take its first step; a refusal counts as a failed check.
func preRolloutPassed(o Observed, d *Decision) bool {
	if o.Status.PreRolloutPassed || !HasWebhooks(o.Spec, sluicev1.WebhookPreRollout) {
		return true
	}
	s := &d.Status
	if g, held := gate(o, sluicev1.WebhookPreRollout); held {
		s.FailedChecks++
		s.LastStepTime = stamp(o.Now)
		d.warning(EventPreRolloutFailed, fmt.Sprintf("Pre-rollout check failed (%d/%d): %s", s.FailedChecks, Threshold(o.Spec), g.Message))
		if s.FailedChecks >= Threshold(o.Spec) {
			rollback(o, d, "pre-rollout checks failed: "+g.Message)
		}
		return false
	}
	s.PreRolloutPassed = true
	return true
}

// checkPassed takes this tick's check (the analysis, the rollback and rollout webhooks) while
// traffic is on the canary and reports whether it passed; a failed check is counted and rolls the
// run back at the threshold. status.iterations counts every check of a weighted run, and the
// passing ones of an A/B run (advanceAB).
func checkPassed(o Observed, d *Decision) bool {
	if o.Check == nil && !o.Spec.SkipAnalysis {
		// The controller runs the analysis when AnalysisDue says so; without it, look again.
		d.RequeueAfter = PollInterval
		return false
	}
	if g, _ := gate(o, sluicev1.WebhookRollback); HasWebhooks(o.Spec, sluicev1.WebhookRollback) && g.Passed {
		d.warning(EventRollbackHook, "A rollback webhook asked for a rollback")
		rollback(o, d, "requested by a rollback webhook")
		return false
	}
	check := Check{}
	if o.Check != nil {
		check = *o.Check
	}
	results := append([]sluicev1.MetricResult(nil), check.Results...)
	if g, held := gate(o, sluicev1.WebhookRollout); held {
		check.Failed = true
		check.Summary = joinSummary(check.Summary, "rollout webhook: "+g.Message)
		results = append(results, sluicev1.MetricResult{Name: "rollout-webhooks", Verdict: sluicev1.VerdictFail,
			Message: g.Message, CheckedAt: stamp(o.Now)})
	}
	s := &d.Status
	ab := IsAB(o.Spec)
	if !ab {
		s.Iterations++
	}
	s.LastStepTime = stamp(o.Now)
	s.Analysis = results
	if check.Failed {
		s.FailedChecks++
		if ab {
			d.warning(EventCheckFailed, fmt.Sprintf("A/B check failed (%d/%d): %s", s.FailedChecks, Threshold(o.Spec), check.Summary))
		} else {
			d.warning(EventCheckFailed, fmt.Sprintf("Check %d failed (%d/%d): %s", s.Iterations, s.FailedChecks, Threshold(o.Spec), check.Summary))
		}
		if s.FailedChecks >= Threshold(o.Spec) {
			rollback(o, d, fmt.Sprintf("failed checks threshold reached (%d): %s", s.FailedChecks, check.Summary))
		}
		return false
	}
	if o.Spec.Analysis.FailedChecksMode == "Consecutive" {
		s.FailedChecks = 0
	}
	return true
}

func joinSummary(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// cancelRun ends a run whose target went back to the revision the primary runs: there is nothing
// left to deliver, so traffic returns to the primary and the canary scales down.
func cancelRun(o Observed, d *Decision) {
	d.setWeight(0)
	d.do(ActionScaleCanaryDown)
	d.Status.LastAppliedSpec = o.Revision
	d.Status.TrackedConfigs = o.TrackedConfigs
	d.setPhase(sluicev1.CanaryPhaseSucceeded, o.Now)
	d.normal(EventRunCancelled, fmt.Sprintf("Target reverted to the primary's revision %s; run cancelled, all traffic on the primary", o.Revision))
}

// rolledBack rolls the run back when failed checks reached the threshold or the progress deadline
// passed, and reports whether it did.
func rolledBack(o Observed, d *Decision) bool {
	if o.Status.FailedChecks >= Threshold(o.Spec) {
		rollback(o, d, fmt.Sprintf("failed checks threshold reached (%d)", o.Status.FailedChecks))
		return true
	}
	if deadlinePassed(o) {
		d.warning(EventDeadline, fmt.Sprintf("No progress for %s (progressDeadlineSeconds)", ProgressDeadline(o.Spec)))
		rollback(o, d, "progress deadline exceeded")
		return true
	}
	return false
}

func deadlinePassed(o Observed) bool {
	last := o.Status.LastProgressTime
	return last != nil && o.Now.Sub(last.Time) > ProgressDeadline(o.Spec)
}

// stepBlocked reports whether the next check or step must wait, and for how long: the canary is
// not ready, a hold applies, or the interval since the last step has not passed.
func stepBlocked(o Observed) (time.Duration, bool) {
	if !o.Canary.IsReady(CanaryReadyThreshold(o.Spec)) {
		return PollInterval, true
	}
	if o.Hold != nil {
		return holdRequeue(o), true
	}
	if last := o.Status.LastStepTime; last != nil {
		if due := last.Add(Interval(o.Spec)); o.Now.Before(due) {
			return due.Sub(o.Now), true
		}
	}
	return 0, false
}

// AnalysisDue reports whether the controller must run the analysis before calling Decide: a run
// is in flight, traffic is on the canary (a weight, or the A/B routing), and the next check is due.
func AnalysisDue(o Observed) bool {
	switch o.Status.Phase {
	case sluicev1.CanaryPhaseProgressing, sluicev1.CanaryPhaseWaitingPromotion:
	default:
		return false
	}
	if o.Revision != o.Status.LastAppliedSpec || !trafficOn(o.Spec, o.Status) {
		return false
	}
	if o.Status.FailedChecks >= Threshold(o.Spec) || deadlinePassed(o) {
		return false
	}
	_, blocked := stepBlocked(o)
	return !blocked
}

// rollback routes all traffic to the primary, scales the canary down and fails the run.
func rollback(o Observed, d *Decision, reason string) {
	d.setWeight(0)
	d.do(ActionScaleCanaryDown)
	d.setPhase(sluicev1.CanaryPhaseFailed, o.Now)
	d.RequeueAfter = Interval(o.Spec)
	d.warning(EventRollback, fmt.Sprintf("Rolling back %s: %s", o.Status.LastAppliedSpec, reason))
}

// startPromotion begins copying the canary's template and configs to the primary.
func startPromotion(o Observed, d *Decision) {
	d.setPhase(sluicev1.CanaryPhasePromoting, o.Now)
	d.Status.LastProgressTime = stamp(o.Now)
	d.do(ActionPromotePrimary)
	d.RequeueAfter = PollInterval
	d.normal(EventPromoting, fmt.Sprintf("Copying revision %s to the primary", d.Status.LastAppliedSpec))
}

// promote waits for the promoted primary, then shifts traffic back to it (an A/B run's routing
// goes off with the move to Finalising; see syncABRoutes).
func promote(o Observed, d *Decision) {
	promoted := o.Primary.Revision == o.Status.LastAppliedSpec
	if !promoted && o.Revision != o.Status.LastAppliedSpec && o.Revision == o.Status.LastPromotedSpec {
		cancelRun(o, d)
		return
	}
	if !promoted && o.Revision != o.Status.LastAppliedSpec {
		// The target changed before its predecessor reached the primary: never promote an
		// unanalysed revision; start over with the new one.
		d.warning(EventRestarted, fmt.Sprintf("New revision %s before promotion of %s; restarting from weight 0", o.Revision, o.Status.LastAppliedSpec))
		startRun(o, d)
		return
	}
	if deadlinePassed(o) {
		d.warning(EventDeadline, fmt.Sprintf("Primary not promoted within %s (progressDeadlineSeconds)", ProgressDeadline(o.Spec)))
		rollback(o, d, "progress deadline exceeded during promotion")
		return
	}
	if !promoted {
		d.do(ActionPromotePrimary)
		d.RequeueAfter = PollInterval
		return
	}
	if !o.Primary.IsReady(PrimaryReadyThreshold(o.Spec)) {
		d.RequeueAfter = PollInterval
		return
	}
	if last := o.Status.LastStepTime; o.Spec.Analysis.StepWeightPromotion > 0 && !IsAB(o.Spec) && last != nil {
		if due := last.Add(Interval(o.Spec)); o.Now.Before(due) {
			d.RequeueAfter = due.Sub(o.Now)
			return
		}
	}
	w := PromotionWeight(o.Spec.Analysis, o.Status.CanaryWeight)
	d.setWeight(w)
	d.Status.LastStepTime = stamp(o.Now)
	d.Status.LastProgressTime = stamp(o.Now)
	if w > 0 {
		d.normal(EventAdvanced, fmt.Sprintf("Promotion: canary weight down to %d", w))
		d.RequeueAfter = Interval(o.Spec)
		return
	}
	d.setPhase(sluicev1.CanaryPhaseFinalising, o.Now)
	d.RequeueAfter = time.Millisecond
	d.normal(EventFinalising, "All traffic on the promoted primary; scaling the canary down")
}

// finalise scales the canary down and records the promotion.
func finalise(o Observed, d *Decision) {
	d.do(ActionScaleCanaryDown)
	d.Status.LastPromotedSpec = o.Status.LastAppliedSpec
	d.setPhase(sluicev1.CanaryPhaseSucceeded, o.Now)
	d.normal(EventSucceeded, fmt.Sprintf("Promotion of %s completed", o.Status.LastAppliedSpec))
}

// restoreDriftedWeights puts the route back to the status weight when someone else changed it.
func restoreDriftedWeights(o Observed, d *Decision) {
	if !o.RouteKnown || o.RouteWeight == o.Status.CanaryWeight {
		return
	}
	switch o.Status.Phase {
	case "", sluicev1.CanaryPhaseInitializing:
		return // the route is not ours to correct before initialization routes it
	}
	// Someone else changed the weights since our last write: say so, and put ours back (unless
	// this tick writes new weights anyway).
	if !d.Has(ActionSetWeights) {
		d.setWeight(d.Status.CanaryWeight)
	}
	d.warning(EventWeightsDrift, fmt.Sprintf("Route had canary weight %d instead of %d (edited outside Sluice); set to %d",
		o.RouteWeight, o.Status.CanaryWeight, d.Status.CanaryWeight))
}

func holdRequeue(o Observed) time.Duration {
	if o.Hold != nil && o.Hold.Until.After(o.Now) {
		if wait := o.Hold.Until.Sub(o.Now); wait < Interval(o.Spec) {
			return wait
		}
	}
	return Interval(o.Spec)
}

// handleRequests acts on new request annotations (abort before promote before retry) and records
// every new value as handled, whether it applied or not, so a leftover annotation never acts on a
// later run. It reports whether a request decided this tick.
func handleRequests(o Observed, d *Decision) bool {
	fresh := map[string]bool{}
	for _, key := range []string{sluicev1.AnnotationAbort, sluicev1.AnnotationPromote, sluicev1.AnnotationRetry} {
		v := o.Requests[key]
		if v == "" || o.Status.LastHandledRequests[key] == v {
			continue
		}
		fresh[key] = true
		if d.Status.LastHandledRequests == nil {
			d.Status.LastHandledRequests = map[string]string{}
		}
		d.Status.LastHandledRequests[key] = v
	}
	phase := o.Status.Phase
	inFlight := phase == sluicev1.CanaryPhaseProgressing || phase == sluicev1.CanaryPhaseWaitingPromotion
	switch {
	case fresh[sluicev1.AnnotationAbort] && inFlight:
		rollback(o, d, "aborted by request ("+sluicev1.AnnotationAbort+")")
	case fresh[sluicev1.AnnotationAbort] && phase == sluicev1.CanaryPhaseWaiting:
		d.Status.LastAppliedSpec = o.Revision
		d.Status.TrackedConfigs = o.TrackedConfigs
		d.setPhase(sluicev1.CanaryPhaseFailed, o.Now)
		d.warning(EventRollback, fmt.Sprintf("Run of %s aborted by request before it started", o.Revision))
	case fresh[sluicev1.AnnotationPromote] && inFlight && o.Revision == o.Status.LastAppliedSpec:
		d.normal(EventRequest, "Promotion requested ("+sluicev1.AnnotationPromote+"): skipping the remaining steps")
		startPromotion(o, d)
	case fresh[sluicev1.AnnotationPromote] && phase == sluicev1.CanaryPhaseWaiting:
		d.normal(EventRequest, "Run approved by request ("+sluicev1.AnnotationPromote+")")
		startRun(o, d)
		d.normal(EventNewRevision, fmt.Sprintf("New revision %s, starting canary analysis", o.Revision))
	case fresh[sluicev1.AnnotationRetry] && phase == sluicev1.CanaryPhaseFailed:
		d.normal(EventRequest, fmt.Sprintf("Retry requested (%s): running %s again", sluicev1.AnnotationRetry, o.Revision))
		startRun(o, d)
	default:
		for key := range fresh {
			d.normal(EventRequest, fmt.Sprintf("Request %s=%s ignored: nothing to act on in phase %s", key, o.Requests[key], phase))
		}
		return false
	}
	return true
}
