package plan

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// progress runs the analysis steps. While traffic is on the canary a check runs every interval,
// whatever holds the advance (a gate, refusing or with its call pending, a closed window, a stall,
// an unready canary): failed checks, the consecutive-error limit and the progress deadline always
// apply. A step advances (a weight, or for an A/B run see advanceAB) only on a passing check and
// when nothing holds it; a step held by a gate whose call was pending is taken between checks
// when the call passes (gatedAdvance).
func progress(o Observed, d *Decision) {
	if o.Revision != o.Status.LastAppliedSpec && o.Revision == o.Status.LastPromotedSpec {
		cancelRun(o, d)
		return
	}
	if o.Revision != o.Status.LastAppliedSpec {
		restart := "restarting from weight 0"
		switch {
		case IsAB(o.Spec):
			restart = "restarting the A/B test"
		case IsBlueGreen(o.Spec):
			restart = "restarting the blue/green iterations"
		}
		d.warning(EventRestarted, fmt.Sprintf("New revision %s during the run of %s; %s", o.Revision, o.Status.LastAppliedSpec, restart))
		startRun(o, d)
		return
	}
	if recoverLostWrites(o, d) {
		return
	}
	defer pauseDeadline(o, d)
	if rolledBack(o, d) {
		return
	}
	if unreadyCanary(o, d) {
		return
	}
	on := trafficOn(o.Spec, o.Status)
	if wait, due := checkDue(o); !due {
		d.RequeueAfter = wait
		if on {
			gatedAdvance(o, d)
		}
		return
	}
	if on && !checkPassed(o, d) {
		return
	}
	if held := advanceHeld(o, d); held {
		return
	}
	if !on && !preRolloutPassed(o, d) {
		return
	}
	advance(o, d)
}

// advance takes the run's next step after a passing check (or, before any traffic, once the step
// is due): the next weight, the next A/B or blue/green iteration, or the promotion, through the
// gates that confirm it.
func advance(o Observed, d *Decision) {
	switch {
	case IsAB(o.Spec):
		advanceAB(o, d)
		return
	case IsBlueGreen(o.Spec):
		advanceBlueGreen(o, d)
		return
	}
	next, ok := NextWeight(Steps(o.Spec.Analysis), o.Status.CanaryWeight)
	if gatePending(o, advanceGateOf(o)) {
		return // no answer yet: the step waits (with traffic on, the check that allowed it counted)
	}
	s := &d.Status
	s.LastProgressTime = stamp(o.Now)
	s.LastStepTime = stepStamp(o)
	if !ok {
		if g, held := gate(o, sluicev1.WebhookConfirmPromotion); held {
			announceGateWait(o, d, sluicev1.WebhookConfirmPromotion, g)
			return
		}
		startPromotion(o, d)
		return
	}
	if g, held := gate(o, sluicev1.WebhookConfirmTrafficIncrease); held {
		announceGateWait(o, d, sluicev1.WebhookConfirmTrafficIncrease, g)
		return
	}
	d.setWeight(next)
	d.normal(EventAdvanced, fmt.Sprintf("Advance canary weight to %d", next))
}

// advanceGateOf is the gate that confirms the run's next step: confirm-promotion once the weights
// or iterations are done (an A/B or blue/green run confirms only that), confirm-traffic-increase
// before another weight.
func advanceGateOf(o Observed) sluicev1.WebhookType {
	if countsPassingChecks(o.Spec) {
		return sluicev1.WebhookConfirmPromotion
	}
	if _, more := NextWeight(Steps(o.Spec.Analysis), o.Status.CanaryWeight); more {
		return sluicev1.WebhookConfirmTrafficIncrease
	}
	return sluicev1.WebhookConfirmPromotion
}

// gatedAdvance takes, between checks, the step that the last check passed but whose gate had not
// answered: once the gate's pending call passes, the step is taken now, provided the last check
// passed the step and nothing holds the run; a refusal is announced as at a check, and the next
// check asks again. The next check keeps its time — the checks' cadence does not move with the
// answer — unless less than half an interval of it is left: as for a late step (stepStamp), each
// weight gets at least half an interval of traffic before its check.
func gatedAdvance(o Observed, d *Decision) {
	t := advanceGateOf(o)
	g, asked := o.Gates[t]
	if !asked || g.Pending || o.Hold != nil || o.Stall != nil || !lastCheckAdvances(o) {
		return
	}
	if !g.Passed {
		announceGateWait(o, d, t, g)
		return
	}
	advance(o, d)
	if last := o.Status.LastStepTime; last != nil && d.Status.LastStepTime != nil {
		d.Status.LastStepTime = stamp(latest(last.Time, o.Now.Add(-Interval(o.Spec)/2)))
	}
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// lastCheckAdvances reports whether the run's last check allowed a step: it passed, or had no
// evidence and advanced without data.
func lastCheckAdvances(o Observed) bool {
	lc := o.Status.LastCheck
	return lc != nil && (lc.Outcome == sluicev1.CheckPassed || lc.AdvancedWithoutData)
}

// announceGateWait records that the step waits at gate t, refused by g: the phase moves to
// WaitingPromotion at the confirm-promotion gate (announced once), a weight waits at the
// confirm-traffic-increase gate (announced at each refusal).
func announceGateWait(o Observed, d *Decision, t sluicev1.WebhookType, g GateResult) {
	if t == sluicev1.WebhookConfirmPromotion {
		if o.Status.Phase != sluicev1.CanaryPhaseWaitingPromotion {
			d.gateWarning(EventWaitingAtGate, "Waiting at the confirm-promotion gate: "+g.Message, g)
		}
		d.setPhase(sluicev1.CanaryPhaseWaitingPromotion, o.Now)
		return
	}
	next, _ := NextWeight(Steps(o.Spec.Analysis), o.Status.CanaryWeight)
	d.gateWarning(EventWaitingAtGate, fmt.Sprintf("Weight %d waits at the confirm-traffic-increase gate: %s", next, g.Message), g)
}

// unreadyCanary takes every weight off a canary below its ready threshold, in the same tick, and
// keeps the run waiting for it under the progress deadline; it reports whether the canary is
// unready.
func unreadyCanary(o Observed, d *Decision) bool {
	if o.Canary.IsReady(CanaryReadyThreshold(o.Spec)) {
		return false
	}
	awaitWatched(o, d, runWaitSince(o))
	if o.Canary.Exists && o.Canary.Desired == 0 {
		d.do(ActionScaleCanaryUp) // the run's scale-up was lost, or someone scaled the canary down
	}
	if o.Status.CanaryWeight > 0 {
		d.setWeight(0)
		d.Status.LastStepTime = stamp(o.Now)
		d.warning(EventCanaryUnready, fmt.Sprintf("Canary has %d/%d ready pods, below its ready threshold %d%%: weight %d -> 0; waiting for it within the progress deadline (%s)",
			o.Canary.Ready, o.Canary.Desired, CanaryReadyThreshold(o.Spec), o.Status.CanaryWeight, ProgressDeadline(o.Spec)))
	}
	return true
}

// PrimaryUnready is the stall of a run whose primary fell below its ready threshold while it
// still serves a share (Progressing, WaitingPromotion), or nil. The run then takes no step and
// does not promote — moving the primary's share to the canary would send more traffic to a
// revision still under analysis —, checks go on, the condition and events say why, and the
// progress deadline ends the run if the primary does not recover.
func PrimaryUnready(o Observed) *Hold {
	switch o.Status.Phase {
	case sluicev1.CanaryPhaseProgressing, sluicev1.CanaryPhaseWaitingPromotion:
	default:
		return nil
	}
	threshold := PrimaryReadyThreshold(o.Spec)
	// Ready pods, not a finished rollout: a primary whose status lags a spec change still serves.
	if !o.Primary.Exists || (o.Primary.Ready > 0 && o.Primary.ReadyPercent() >= threshold) {
		return nil
	}
	return &Hold{Reason: sluicev1.ReasonPrimaryUnready, Message: fmt.Sprintf(
		"primary has %d/%d ready pods, below its ready threshold %d%%: the run holds (no step, no promotion) until it recovers, within the progress deadline (%s)",
		o.Primary.Ready, o.Primary.Desired, threshold, ProgressDeadline(o.Spec))}
}

// advanceHeld reports whether a hold or a stall keeps the step from advancing, and looks again
// when it may lift.
func advanceHeld(o Observed, d *Decision) bool {
	switch {
	case o.Stall != nil:
		d.RequeueAfter = Interval(o.Spec)
		return true
	case o.Hold != nil:
		d.RequeueAfter = holdRequeue(o)
		return true
	}
	return false
}

// preRolloutPassed resolves the pre-rollout gate before the first traffic of a run and reports
// whether the run may take its first step; a refusal counts as a failed check.
func preRolloutPassed(o Observed, d *Decision) bool {
	if o.Status.PreRolloutPassed || !HasWebhooks(o.Spec, sluicev1.WebhookPreRollout) {
		return true
	}
	s := &d.Status
	if gatePending(o, sluicev1.WebhookPreRollout) {
		return false // no answer yet: no failed check, and the progress deadline runs on
	}
	if g, held := gate(o, sluicev1.WebhookPreRollout); held {
		s.FailedChecks++
		s.LastStepTime = stamp(o.Now)
		d.gateWarning(EventPreRolloutFailed, fmt.Sprintf("Pre-rollout check failed (%d/%d): %s", s.FailedChecks, Threshold(o.Spec), g.Message), g)
		if s.FailedChecks >= Threshold(o.Spec) {
			rollback(o, d, "pre-rollout checks failed: "+g.Message)
		}
		return false
	}
	s.PreRolloutPassed = true
	return true
}

// checkPassed takes this tick's check (the analysis, the rollback and rollout webhooks) while
// traffic is on the canary and reports whether the step may advance. The evidence rule: only a
// check with at least one passing metric (or passing rollout webhook) and no failure advances; a
// check without a verdict holds the step unless analysis.advanceWithoutData; a failed check is
// counted and rolls back at the threshold; a check that could not be judged holds the step and
// rolls back at analysis.consecutiveErrorLimit. status.iterations counts every check of a
// weighted run, and the passing ones of an A/B or blue/green run (advanceAB, advanceBlueGreen).
func checkPassed(o Observed, d *Decision) bool {
	if o.Check == nil && !o.Spec.SkipAnalysis {
		// The controller runs the analysis when AnalysisDue says so; without it, look again.
		d.RequeueAfter = PollInterval
		return false
	}
	if checkHooksPending(o) && !judgedFailing(o.Check) {
		// The rollout and rollback webhooks judge the canary with the metrics: the check waits
		// for their answer (bounded by their calls' budget), unless its metrics already failed.
		return false
	}
	if g, _ := gate(o, sluicev1.WebhookRollback); HasWebhooks(o.Spec, sluicev1.WebhookRollback) && g.Passed {
		d.warning(EventRollbackHook, "A rollback webhook asked for a rollback")
		rollback(o, d, "requested by a rollback webhook")
		return false
	}
	check := Check{Outcome: sluicev1.CheckPassed}
	if o.Check != nil {
		check = *o.Check
	}
	outcome := check.outcome()
	results := append([]sluicev1.MetricResult(nil), check.Results...)
	if HasWebhooks(o.Spec, sluicev1.WebhookRollout) {
		if g, held := gate(o, sluicev1.WebhookRollout); held && !g.Pending {
			outcome = sluicev1.CheckFailed
			check.Summary = joinSummary(check.Summary, "rollout webhook: "+g.Message)
			results = append(results, sluicev1.MetricResult{Name: "rollout-webhooks", Verdict: sluicev1.VerdictFail,
				Message: g.Message, CheckedAt: stamp(o.Now)})
		} else if outcome == sluicev1.CheckNoEvidence {
			outcome, check.Summary = sluicev1.CheckPassed, "" // the rollout webhooks judged the canary
		}
	}
	s := &d.Status
	passing := countsPassingChecks(o.Spec)
	if !passing {
		s.Iterations++
	}
	s.LastStepTime = stepStamp(o)
	s.Analysis = results
	s.LastCheck = &sluicev1.CheckStatus{Time: metav1.NewTime(o.Now), Outcome: outcome, Message: check.Summary}
	if !check.WindowStart.IsZero() {
		s.LastCheck.WindowStart = stamp(check.WindowStart)
	}
	name := fmt.Sprintf("Check %d", s.Iterations)
	switch {
	case IsAB(o.Spec):
		name = "A/B check"
	case IsBlueGreen(o.Spec):
		name = "Blue/green check"
	}
	if outcome != sluicev1.CheckError {
		s.ConsecutiveErrors = 0
	}
	switch outcome {
	case sluicev1.CheckFailed:
		s.FailedChecks++
		d.warning(EventCheckFailed, fmt.Sprintf("%s failed (%d/%d): %s", name, s.FailedChecks, Threshold(o.Spec), check.Summary))
		if s.FailedChecks >= Threshold(o.Spec) {
			rollback(o, d, fmt.Sprintf("failed checks threshold reached (%d): %s", s.FailedChecks, check.Summary))
		}
		return false
	case sluicev1.CheckError:
		s.ConsecutiveErrors++
		limit := ConsecutiveErrorLimit(o.Spec)
		d.warning(EventMetricsError, fmt.Sprintf("%s could not be judged (%d/%d consecutive errors), holding the step: %s",
			name, s.ConsecutiveErrors, limit, check.Summary))
		if s.ConsecutiveErrors >= limit {
			rollback(o, d, fmt.Sprintf("metrics unavailable for %d consecutive checks (consecutiveErrorLimit %d): %s", s.ConsecutiveErrors, limit, check.Summary))
		}
		return false
	case sluicev1.CheckNoEvidence:
		if !o.Spec.Analysis.AdvanceWithoutData {
			d.warning(EventNoEvidence, fmt.Sprintf("%s had no evidence, holding the step: %s", name, check.Summary))
			return false
		}
		s.LastCheck.AdvancedWithoutData = true
		// One warning per streak: status.lastCheck says it at every check, and a run whose checks
		// never see data would otherwise post the same warning at every step.
		if prev := o.Status.LastCheck; prev == nil || !prev.AdvancedWithoutData {
			d.warning(EventNoData, fmt.Sprintf("%s had no evidence; advancing anyway (analysis.advanceWithoutData; further checks without evidence advance with status.lastCheck.advancedWithoutData set, without another event): %s",
				name, check.Summary))
		}
	}
	if o.Spec.Analysis.FailedChecksMode == "Consecutive" {
		s.FailedChecks = 0
	}
	if o.Stall == nil {
		// A passing check is progress, unless a stall holds the run: then the deadline runs on.
		s.LastProgressTime = stamp(o.Now)
	}
	return true
}

// checkHooksPending reports whether a rollout or rollback webhook of this check has not answered.
func checkHooksPending(o Observed) bool {
	return gatePending(o, sluicev1.WebhookRollout) || gatePending(o, sluicev1.WebhookRollback)
}

// judgedFailing reports whether a check's metrics failed or could not be judged: the check counts
// so whatever its webhooks answer.
func judgedFailing(c *Check) bool {
	if c == nil {
		return false
	}
	out := c.outcome()
	return out == sluicev1.CheckFailed || out == sluicev1.CheckError
}

func joinSummary(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// rolledBack rolls the run back when failed checks reached the threshold, the checks could not be
// judged too many times in a row, or the progress deadline passed, and reports whether it did.
// The deadline's message names what held the run (a stall, a hold, an unready canary).
func rolledBack(o Observed, d *Decision) bool {
	if o.Status.FailedChecks >= Threshold(o.Spec) {
		rollback(o, d, fmt.Sprintf("failed checks threshold reached (%d)", o.Status.FailedChecks))
		return true
	}
	if limit := ConsecutiveErrorLimit(o.Spec); o.Status.ConsecutiveErrors >= limit {
		rollback(o, d, fmt.Sprintf("metrics unavailable for %d consecutive checks (consecutiveErrorLimit %d)", o.Status.ConsecutiveErrors, limit))
		return true
	}
	if deadlinePassed(o) && !pausedByOperator(o) {
		why := ""
		switch {
		case o.Stall != nil:
			why = fmt.Sprintf(" while stalled (%s: %s)", o.Stall.Reason, o.Stall.Message)
		case reconcileError(o.Status) != "":
			why = fmt.Sprintf(" while its writes failed (%s: %s)", sluicev1.ReasonReconcileError, reconcileError(o.Status))
		case !o.Canary.IsReady(CanaryReadyThreshold(o.Spec)):
			why = fmt.Sprintf(" waiting for the canary to become ready (%d/%d ready)", o.Canary.Ready, o.Canary.Desired)
		case o.Status.LastCheck != nil && o.Status.LastCheck.Outcome != sluicev1.CheckPassed:
			why = fmt.Sprintf(" (last check %s: %s)", o.Status.LastCheck.Outcome, o.Status.LastCheck.Message)
		case o.Hold != nil:
			why = fmt.Sprintf(" while held (%s: %s)", o.Hold.Reason, o.Hold.Message)
		}
		d.warning(EventDeadline, fmt.Sprintf("No progress for %s (progressDeadlineSeconds)%s", ProgressDeadline(o.Spec), why))
		rollback(o, d, "progress deadline exceeded"+why)
		return true
	}
	return false
}

// reconcileError is the message of the error the last ticks failed with (Ready=False with reason
// ReconcileError: a route or workload write refused, say), or "".
func reconcileError(s sluicev1.CanaryStatus) string {
	if c := meta.FindStatusCondition(s.Conditions, sluicev1.ConditionReady); c != nil &&
		c.Status == metav1.ConditionFalse && c.Reason == sluicev1.ReasonReconcileError {
		return c.Message
	}
	return ""
}

func deadlinePassed(o Observed) bool {
	last := o.Status.LastProgressTime
	return last != nil && o.Now.Sub(last.Time) > ProgressDeadline(o.Spec)
}

// checkDue reports whether the next check (with traffic on the canary) or step (without) is due,
// or how long until it is: one interval after the last step or check. Holds do not delay checks.
func checkDue(o Observed) (time.Duration, bool) {
	if last := o.Status.LastStepTime; last != nil {
		if due := last.Add(Interval(o.Spec)); o.Now.Before(due) {
			return due.Sub(o.Now), false
		}
	}
	return 0, true
}

// AnalysisDue reports whether the controller must run the analysis before calling Decide: a run
// is in flight, traffic is on the canary (a weight, or the A/B routing), the canary is ready and
// the next check is due — whether or not anything holds the advance. It is false when Decide will
// first recover a lost write (the check of this round already ran).
func AnalysisDue(o Observed) bool {
	switch o.Status.Phase {
	case sluicev1.CanaryPhaseProgressing, sluicev1.CanaryPhaseWaitingPromotion:
	case sluicev1.CanaryPhasePromoting:
		return o.Revision == o.Status.LastAppliedSpec && o.Status.FailedChecks < Threshold(o.Spec) && promotionAnalysisDue(o)
	default:
		return false
	}
	if o.Revision != o.Status.LastAppliedSpec || !trafficOn(o.Spec, o.Status) || lostWrite(o) {
		return false
	}
	if o.Status.FailedChecks >= Threshold(o.Spec) || o.Status.ConsecutiveErrors >= ConsecutiveErrorLimit(o.Spec) || deadlinePassed(o) {
		return false
	}
	if !o.Canary.IsReady(CanaryReadyThreshold(o.Spec)) {
		return false
	}
	_, due := checkDue(o)
	return due
}

// rollback routes all traffic to the primary, scales the canary down and fails the run. The
// status is written first (Decision.StatusFirst). When the primary already runs the run's
// revision (promoted), it is restored to the last promoted one. The primary is never below its
// share of traffic: when the canary serves its share with more ready replicas than the primary
// has, the canary keeps it while the primary scales up (returnTraffic; the Failed run's idle ticks
// move it once the primary has them ready).
func rollback(o Observed, d *Decision, reason string) {
	d.StatusFirst = true
	restore := false
	if p := o.Primary; p.Exists && p.Revision != "" && o.Status.LastPromotedSpec != "" && p.Revision != o.Status.LastPromotedSpec {
		restore = true
		reason += fmt.Sprintf("; restoring the primary from %s to %s", p.Revision, o.Status.LastPromotedSpec)
	}
	d.setPhase(sluicev1.CanaryPhaseFailed, o.Now)
	d.RequeueAfter = Interval(o.Spec)
	d.warning(EventRollback, fmt.Sprintf("Rolling back %s: %s", o.Status.LastAppliedSpec, reason))
	if d.Status.CanaryWeight == 0 {
		d.setWeight(0)
		d.do(ActionScaleCanaryDown)
	} else {
		returnTraffic(o, d)
	}
	if restore {
		d.do(ActionRestorePrimary)
	}
}

// pauseDeadline keeps the progress deadline waiting during an operator's pause: each check taken
// while paused counts as progress for the deadline only (the failed-check threshold still
// applies), so after a resume the deadline counts from the last check, not from before the pause.
func pauseDeadline(o Observed, d *Decision) {
	if !pausedByOperator(o) || !runningPhase(d.Status.Phase) {
		return
	}
	if last := d.Status.LastStepTime; last != nil && (o.Status.LastStepTime == nil || last.After(o.Status.LastStepTime.Time)) {
		d.Status.LastProgressTime = last.DeepCopy()
	}
}

func runningPhase(p sluicev1.CanaryPhase) bool {
	return p == sluicev1.CanaryPhaseProgressing || p == sluicev1.CanaryPhaseWaitingPromotion
}
