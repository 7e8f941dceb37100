package plan

import (
	"fmt"
	"time"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// EventInitializationStalled is the warning of an initialization past the progress deadline.
const EventInitializationStalled = sluicev1.ReasonInitializationStalled

// initialize waits for the primary to become ready, then routes everything to it and scales the
// target down. Nothing moves to the primary before it serves, so an initialization that cannot
// finish never causes an outage; past the progress deadline it is reported stalled (Decision.Stall,
// with what the primary waits on) and keeps waiting, so it completes by itself once the cause is
// fixed.
func initialize(o Observed, d *Decision) {
	d.setPhase(sluicev1.CanaryPhaseInitializing, o.Now)
	if !o.Primary.IsReady(PrimaryReadyThreshold(o.Spec)) {
		waitForPrimary(o, d)
		return
	}
	if o.MetricsWait != nil {
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

// waitForPrimary says what the unready primary waits on (Decision.Waiting) and, once the
// initialization has lasted longer than the progress deadline, reports it stalled with that root
// cause (Decision.Stall). The apex Service and the routes stay as they are.
func waitForPrimary(o Observed, d *Decision) {
	var started time.Time
	if t := d.Status.LastTransitionTime; t != nil {
		started = t.Time
	}
	awaitWatched(o, d, started)
	p := o.Primary
	msg := fmt.Sprintf("Waiting for the primary to become ready (%d/%d ready pods, ready threshold %d%%)",
		p.Ready, p.Desired, PrimaryReadyThreshold(o.Spec))
	if p.ReadyNotAvailable > 0 {
		msg = fmt.Sprintf("Waiting for the primary to become ready (%d/%d ready pods, %d of them not available yet (minReadySeconds), ready threshold %d%%)",
			p.Ready, p.Desired, p.ReadyNotAvailable, PrimaryReadyThreshold(o.Spec))
	}
	if !p.Exists {
		msg = "Waiting for the primary deployment to be created"
	}
	if o.PrimaryWaitingOn != "" {
		msg += ": " + o.PrimaryWaitingOn
	}
	d.Waiting = &Hold{Reason: sluicev1.ReasonInitializing, Message: msg}
	since := d.Status.LastTransitionTime
	if since == nil || o.Now.Sub(since.Time) <= ProgressDeadline(o.Spec) {
		return
	}
	d.Stall = &Hold{Reason: sluicev1.ReasonInitializationStalled, Message: fmt.Sprintf(
		"Initialization stalled: the primary did not become ready within the progress deadline (%s); the Service and routes stay as they were, still waiting. %s",
		ProgressDeadline(o.Spec), msg)}
	// Past the deadline a watch event on the primary brings the next tick; poll slowly.
	d.RequeueAfter = Interval(o.Spec)
}
