package plan

import (
	"fmt"
	"time"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// Event reasons recorded by Decide.
const (
	EventInitialized    = "Initialized"
	EventNewRevision    = "NewRevision"
	EventRestarted      = "RunRestarted"
	EventWaiting        = "Waiting"
	EventAdvanced       = "WeightAdvanced"
	EventCheckFailed    = "CheckFailed"
	EventRollback       = "RolledBack"
	EventPromoting      = "Promoting"
	EventSucceeded      = "Succeeded"
	EventWeightsDrift   = "WeightsRestored"
	EventDeadline       = "ProgressDeadlineExceeded"
	EventRevisionMatch  = "RevisionMatchesPrimary"
	EventRunCancelled   = "RunCancelled"
	EventRequest        = "RequestHandled"
	EventCanaryUnready  = "CanaryUnready"
	EventNoEvidence     = "NoEvidence"
	EventNoData         = "AdvancedWithoutData"
	EventMetricsError   = "MetricsUnavailable"
	EventWriteRecovered = "LostWriteRecovered"
	EventPrimaryRestore = "PrimaryRestoring"
)

// Decide returns the next step of the Canary's lifecycle for what was observed in one tick.
func Decide(o Observed) Decision {
	d := Decision{Status: *o.Status.DeepCopy(), RequeueAfter: Interval(o.Spec)}
	recordAnswers(o, &d)
	phase := o.Status.Phase
	if o.PrimaryCreated {
		phase = sluicev1.CanaryPhaseInitializing // a new primary: the lifecycle starts over
	}
	if !handleRequests(o, &d) {
		switch phase {
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
			finaliseWhenRolledOut(o, &d)
		default:
			// Terminating/Terminated are handled by the controller's deletion path.
		}
	}
	restoreDriftedWeights(o, &d)
	syncABRoutes(o, &d)
	syncExtras(o, &d)
	scaleDownLast(&d)
	lookWhenDue(o, &d)
	pollWhilePending(o, &d)
	recordPendingCalls(o, &d)
	return d
}

// lookWhenDue looks again when the next check is due: an interval after the step or check this
// decision recorded, which a late tick (and a run's first step, see stepStamp) records earlier
// than now. Looking an interval from now instead would carry that delay into every later step.
func lookWhenDue(o Observed, d *Decision) {
	switch d.Status.Phase {
	case sluicev1.CanaryPhaseProgressing, sluicev1.CanaryPhaseWaitingPromotion, sluicev1.CanaryPhasePromoting:
	default:
		return // no check to come
	}
	last := d.Status.LastStepTime
	if last == nil || last.Equal(o.Status.LastStepTime) || d.RequeueAfter <= 0 {
		return
	}
	if wait := last.Add(Interval(o.Spec)).Sub(o.Now); wait > 0 && wait < d.RequeueAfter {
		d.RequeueAfter = wait
	}
}

// scaleDownLast moves the canary's scale-down after every other action, so it runs only once the
// route writes that take traffic off the canary (weights, A/B rules, mirroring, affinity) went
// through: the controller stops at the first failed action, and a route write refused in any
// phase (a rollback, an idle repair) never leaves traffic on a canary without pods.
func scaleDownLast(d *Decision) {
	if !d.Has(ActionScaleCanaryDown) {
		return
	}
	actions := make([]Action, 0, len(d.Actions))
	for _, a := range d.Actions {
		if a != ActionScaleCanaryDown {
			actions = append(actions, a)
		}
	}
	d.Actions = append(actions, ActionScaleCanaryDown)
}

// idle watches for a new revision while no run is in flight, keeps the target scaled down and the
// primary on the promoted revision.
func idle(o Observed, d *Decision) {
	if returnTraffic(o, d) {
		// An ended run's canary keeps its share until the primary can carry it; the primary's
		// restore (a rollback after its promotion) goes on meanwhile.
		if p := o.Primary; p.Exists && p.Revision != "" && o.Status.LastPromotedSpec != "" && p.Revision != o.Status.LastPromotedSpec {
			d.do(ActionRestorePrimary)
		}
		return
	}
	if restorePrimary(o, d) {
		return
	}
	switch o.Revision {
	case o.Status.LastAppliedSpec:
		if o.Canary.Desired > 0 {
			d.do(ActionScaleCanaryDown)
		}
	case o.Status.LastPromotedSpec:
		// The target went back to what the primary runs: nothing to deliver, and the status says
		// what the primary serves.
		d.Status.LastAppliedSpec = o.Revision
		d.Status.TrackedConfigs = o.TrackedConfigs
		msg := fmt.Sprintf("Revision %s is what the primary runs; no canary run", o.Revision)
		if o.Status.Phase == sluicev1.CanaryPhaseFailed {
			d.setPhase(sluicev1.CanaryPhaseSucceeded, o.Now)
			msg = fmt.Sprintf("Target set back to %s, the revision the primary serves: no canary run, Succeeded", o.Revision)
		}
		d.normal(EventRevisionMatch, msg)
		if o.Canary.Desired > 0 {
			d.do(ActionScaleCanaryDown)
		}
	default:
		newRun(o, d)
	}
}

// restorePrimary puts the primary back on the last promoted revision when it runs another one
// (a rollback after the primary had been promoted); it reports whether it is doing so.
func restorePrimary(o Observed, d *Decision) bool {
	p := o.Primary
	if !p.Exists || p.Revision == "" || o.Status.LastPromotedSpec == "" || p.Revision == o.Status.LastPromotedSpec {
		return false
	}
	if !d.Has(ActionRestorePrimary) {
		d.do(ActionRestorePrimary)
	}
	if d.Status.CanaryWeight != 0 {
		d.setWeight(0)
	}
	awaitWatched(o, d, o.Now) // the primary's rollout wakes the next tick
	d.warning(EventPrimaryRestore, fmt.Sprintf("Primary runs %s, not the promoted %s: restoring it", p.Revision, o.Status.LastPromotedSpec))
	return true
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
	hold := o.Hold
	if hold == nil {
		hold = o.Stall
	}
	if hold != nil {
		if d.Status.Phase != sluicev1.CanaryPhaseWaiting {
			d.normal(EventWaiting, fmt.Sprintf("New revision %s waits: %s", o.Revision, hold.Message))
		}
		d.setPhase(sluicev1.CanaryPhaseWaiting, o.Now)
		scaleDownUnstarted(o, d)
		d.RequeueAfter = holdRequeue(o)
		return
	}
	if g, held := gate(o, sluicev1.WebhookConfirmRollout); held {
		if g.Pending { // no answer yet: the run does not start, and nothing else changes
			scaleDownUnstarted(o, d)
			return
		}
		if d.Status.Phase != sluicev1.CanaryPhaseWaiting {
			d.gateWarning(EventWaitingAtGate, fmt.Sprintf("New revision %s waits at the confirm-rollout gate: %s", o.Revision, g.Message), g)
		}
		d.setPhase(sluicev1.CanaryPhaseWaiting, o.Now)
		scaleDownUnstarted(o, d)
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

// scaleDownUnstarted keeps the canary of a run that waits to start at zero, as at rest: its pods
// run a revision no run has admitted yet. They are up only when something scaled the target
// between runs (a start cut short by a crash after its scale-up, whose slot under the cap
// another run then took; a hand scale-up); the run's start scales it up again.
func scaleDownUnstarted(o Observed, d *Decision) {
	if o.Canary.Desired > 0 {
		d.do(ActionScaleCanaryDown)
	}
}

// startRun resets the run's progress and scales the canary up at weight 0.
func startRun(o Observed, d *Decision) {
	s := &d.Status
	s.LastAppliedSpec = o.Revision
	s.TrackedConfigs = o.TrackedConfigs
	s.FailedChecks = 0
	s.ConsecutiveErrors = 0
	s.Iterations = 0
	s.PreRolloutPassed = false
	s.SlotReleased = false // a run starts holding its slot of the cap (--max-progressing)
	s.Analysis = nil
	s.LastCheck = nil
	s.Webhooks = nil
	s.Notifications = nil
	s.LastStepTime = nil
	s.LastProgressTime = stamp(o.Now)
	s.RunStartTime = stamp(o.Now)
	d.setWeight(0)
	d.do(ActionScaleCanaryUp)
	d.setPhase(sluicev1.CanaryPhaseProgressing, o.Now)
	awaitWatched(o, d, o.Now) // the canary's pods starting wake the next tick (the target watch)
}

// cancelRun ends a run whose target went back to the revision the primary runs: there is nothing
// left to deliver, so traffic returns to the primary and the canary scales down.
// The primary is never below its share: see returnTraffic.
func cancelRun(o Observed, d *Decision) {
	d.StatusFirst = true
	d.Status.LastAppliedSpec = o.Revision
	d.Status.TrackedConfigs = o.TrackedConfigs
	d.setPhase(sluicev1.CanaryPhaseSucceeded, o.Now)
	d.normal(EventRunCancelled, fmt.Sprintf("Target reverted to the primary's revision %s; run cancelled, all traffic on the primary", o.Revision))
	if d.Status.CanaryWeight == 0 {
		d.setWeight(0)
		d.do(ActionScaleCanaryDown)
	} else {
		returnTraffic(o, d)
	}
}

func holdRequeue(o Observed) time.Duration {
	if o.Hold != nil && o.Hold.Until.After(o.Now) {
		if wait := o.Hold.Until.Sub(o.Now); wait < Interval(o.Spec) {
			return wait
		}
	}
	return Interval(o.Spec)
}
