package plan

import (
	"fmt"
	"time"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// startPromotion begins copying the canary's template and configs to the primary. The status
// (Promoting, with the check that allowed it counted) is written first: the promotion is several
// writes (config restore points, config copies, the primary), and a crash between them must
// neither repeat that check nor leave the run Progressing; the Promoting phase retries the
// promotion until the primary runs the revision (promote).
func startPromotion(o Observed, d *Decision) {
	d.StatusFirst = true
	d.setPhase(sluicev1.CanaryPhasePromoting, o.Now)
	d.Status.LastProgressTime = stamp(o.Now)
	d.do(ActionPromotePrimary)
	awaitWatched(o, d, o.Now) // the primary's change wakes the next tick
	d.normal(EventPromoting, fmt.Sprintf("Copying revision %s to the primary", d.Status.LastAppliedSpec))
}

// promote waits for the promoted primary, then shifts traffic back to it and ends the run (an A/B
// run's routing goes off with the move to Succeeded; see syncABRoutes). With stepWeightPromotion the canary
// keeps a share for a few intervals: checks keep running on it, and the threshold and the
// deadline apply (a rollback then restores the primary).
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
	if promoted && o.Revision != o.Status.LastAppliedSpec {
		newRevisionAfterPromotion(o, d)
		return
	}
	if o.Status.FailedChecks >= Threshold(o.Spec) || o.Status.ConsecutiveErrors >= ConsecutiveErrorLimit(o.Spec) {
		rolledBack(o, d)
		return
	}
	if deadlinePassed(o) {
		d.warning(EventDeadline, fmt.Sprintf("Primary not promoted within %s (progressDeadlineSeconds)%s", ProgressDeadline(o.Spec), endpointsLag(o)))
		rollback(o, d, "progress deadline exceeded during promotion"+endpointsLag(o))
		return
	}
	leaveUnreadyCanary(o, d)
	if !promoted {
		d.do(ActionPromotePrimary)
		awaitWatched(o, d, runWaitSince(o))
		return
	}
	if !o.Primary.IsReady(PrimaryReadyThreshold(o.Spec)) {
		awaitWatched(o, d, runWaitSince(o))
		return
	}
	if promotionChecks(o) {
		if due := o.Status.LastStepTime.Add(Interval(o.Spec)); o.Now.Before(due) {
			d.RequeueAfter = due.Sub(o.Now)
			return
		}
		if !o.Canary.IsReady(CanaryReadyThreshold(o.Spec)) {
			// Nothing to judge on a canary without ready pods: all traffic to the promoted primary.
			d.warning(EventCanaryUnready, "Canary lost its ready pods during the promotion: all traffic to the promoted primary")
		} else if !checkPassed(o, d) {
			return
		}
	}
	w := PromotionWeight(o.Spec.Analysis, o.Status.CanaryWeight)
	canaryReady := o.Canary.IsReady(CanaryReadyThreshold(o.Spec))
	if !canaryReady {
		w = 0 // no weight to a canary that cannot serve it: the (ready) primary takes it now
	}
	if w == 0 && o.Status.CanaryWeight > 0 && canaryReady && !primaryCanTakeOver(o, d) {
		return
	}
	d.setWeight(w)
	d.Status.LastStepTime = stepStamp(o)
	d.Status.LastProgressTime = stamp(o.Now)
	if w > 0 {
		d.normal(EventAdvanced, fmt.Sprintf("Promotion: canary weight down to %d", w))
		d.RequeueAfter = Interval(o.Spec)
		return
	}
	// All traffic on the promoted primary: the run ends in this tick. The route write comes
	// before the canary's scale-down (scaleDownLast), which reads the route back first and leaves
	// the canary to the next (idle) tick while the route still sends it traffic; the status is
	// written last, as for every forward move: a lost Succeeded is this decision again (the
	// primary runs the revision, the route is at 0).
	finalise(o, d)
}

// leaveUnreadyCanary sends all traffic to the primary while it is still being promoted when the
// canary carrying it fell below its ready threshold (pods evicted, a node drained) and the primary
// has at least as many ready pods: never route to a backend that lost its pods while another
// serves. The primary's ready pods run the promoted revision or the one promoted before it, both
// analysed. Once the primary has rolled out, promote's own takeover handles an unready canary.
func leaveUnreadyCanary(o Observed, d *Decision) {
	c, p := o.Canary, o.Primary
	if o.Status.CanaryWeight == 0 || c.IsReady(CanaryReadyThreshold(o.Spec)) || p.IsReady(PrimaryReadyThreshold(o.Spec)) ||
		p.Ready < max(c.Ready, 1) {
		return
	}
	d.setWeight(0)
	d.warning(EventCanaryUnready, fmt.Sprintf("Canary has %d/%d ready pods during the promotion: all traffic to the primary (%d ready) while it rolls out",
		c.Ready, c.Desired, p.Ready))
}

// newRevisionAfterPromotion handles a new target revision once the primary already runs the
// run's (analysed) one: the canary's pods are rolling to a revision no check has judged, so every
// request leaves the canary in this tick (weight 0, A/B rules and mirroring off with the phase) —
// to the primary, which serves the analysed revision. The primary may not be ready for that load
// yet: it is scaled at once to the canary's ready replicas (as primaryCanTakeOver does before a
// normal takeover), and the run ends (Finalising, then Succeeded) only once the primary has rolled
// out the promoted revision (finaliseWhenRolledOut). The new revision then starts its own run
// from weight 0.
func newRevisionAfterPromotion(o Observed, d *Decision) {
	if o.Primary.Desired < o.Canary.Ready {
		d.scalePrimary(o.Canary.Ready) // first: its pods start before the traffic moves
		d.normal(EventPrimaryScaled, fmt.Sprintf("Scaling the primary to %d replicas, as many as the canary served with: it takes all traffic now",
			o.Canary.Ready))
	}
	d.setWeight(0)
	d.Status.LastStepTime = stamp(o.Now)
	d.Status.LastProgressTime = stamp(o.Now)
	d.setPhase(sluicev1.CanaryPhaseFinalising, o.Now)
	d.RequeueAfter = time.Millisecond
	d.warning(EventRestarted, fmt.Sprintf("New revision %s while promoting %s: all traffic to the primary, which runs %s; the promotion completes once the primary has rolled out, then %s starts its own run",
		o.Revision, o.Status.LastAppliedSpec, o.Status.LastAppliedSpec, o.Revision))
}

// finaliseWhenRolledOut ends a run that left the canary through Finalising (a new revision
// during the promotion) once the primary has rolled out the promoted revision: Succeeded must not
// be said while the primary still serves pods of an older one. Past the progress deadline the run
// is rolled back, naming the primary's rollout.
func finaliseWhenRolledOut(o Observed, d *Decision) {
	p := o.Primary
	if p.Revision == o.Status.LastAppliedSpec && p.IsReady(PrimaryReadyThreshold(o.Spec)) {
		finalise(o, d)
		return
	}
	if deadlinePassed(o) {
		reason := fmt.Sprintf("the primary did not roll out %s within %s (progressDeadlineSeconds): %d of %d replicas updated, %d ready",
			o.Status.LastAppliedSpec, ProgressDeadline(o.Spec), p.Updated, p.Desired, p.Ready)
		d.warning(EventDeadline, "Promotion not completed: "+reason)
		rollback(o, d, reason)
		return
	}
	awaitWatched(o, d, runWaitSince(o))
}

// promotionChecks reports whether a promotion steps its weight back to the primary over several
// intervals (stepWeightPromotion) and has stepped at least once: then every further step needs a
// check of the canary's share.
func promotionChecks(o Observed) bool {
	return o.Spec.Analysis.StepWeightPromotion > 0 && !IsAB(o.Spec) && o.Status.LastStepTime != nil &&
		o.Status.CanaryWeight > 0 && !o.Spec.SkipAnalysis
}

// promotionAnalysisDue is AnalysisDue for the Promoting phase.
func promotionAnalysisDue(o Observed) bool {
	if o.Primary.Revision != o.Status.LastAppliedSpec || !o.Primary.IsReady(PrimaryReadyThreshold(o.Spec)) ||
		!o.Canary.IsReady(CanaryReadyThreshold(o.Spec)) || !promotionChecks(o) || deadlinePassed(o) {
		return false
	}
	return !o.Now.Before(o.Status.LastStepTime.Add(Interval(o.Spec)))
}

// finalise scales the canary down and records the promotion: the end of a run whose traffic is
// all on the promoted primary (promote), or of one that passed through Finalising (a new revision
// during the promotion, see newRevisionAfterPromotion).
func finalise(o Observed, d *Decision) {
	d.do(ActionScaleCanaryDown)
	d.Status.LastPromotedSpec = o.Status.LastAppliedSpec
	d.setPhase(sluicev1.CanaryPhaseSucceeded, o.Now)
	d.normal(EventSucceeded, fmt.Sprintf("Promotion of %s completed: all traffic on the primary, scaling the canary down", o.Status.LastAppliedSpec))
}
