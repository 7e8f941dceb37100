package plan

import "time"

// Waits on watched objects.
//
// Most waits of a Canary end with a change the controller watches: the primary's status (owned),
// the target's status (the target watch wakes every Canary with a run in flight on a status-only
// change), a Deployment it just wrote. Such a wait needs no poll: the change wakes the Canary the
// moment the cache holds it. The timer of such a wait only has to bring the tick that judges the
// progress deadline (a rollback or a stall needs a tick at that time, a watch brings none) and
// bounds what a missed event could hide, at one interval.
//
// Polling every PollInterval instead costs a tick per waiting Canary every two seconds: with a
// thousand Canaries waiting on pods at once (a release of a shared ConfigMap), five hundred ticks a
// second that hold the workers while the steps of other runs wait for one (make bench-scale).
// PollInterval stays for what is not watched: the primary Service's endpoints when their slices
// lack the role label the controller's EndpointSlice watch selects (awaitEndpoints), a check the controller has not run yet, a lost write's recovery (the Canary's
// own status writes wake nobody), metrics not scraped yet.

// awaitWatched sets the decision's next look for a wait that a watched change ends: at the progress
// deadline counted from since (plus a moment, as deadlines are passed strictly after), at most one
// interval away. A nil since counts from now.
func awaitWatched(o Observed, d *Decision, since time.Time) {
	wait := Interval(o.Spec)
	if since.IsZero() {
		since = o.Now
	}
	if left := since.Add(ProgressDeadline(o.Spec)).Sub(o.Now) + deadlineMargin; left > 0 && left < wait {
		wait = left
	}
	d.RequeueAfter = max(wait, deadlineMargin)
}

// deadlineMargin is how long after the progress deadline the tick that judges it comes.
const deadlineMargin = 100 * time.Millisecond

// runWaitSince is the time the progress deadline of a run's wait counts from (status.lastProgressTime).
func runWaitSince(o Observed) time.Time {
	if last := o.Status.LastProgressTime; last != nil {
		return last.Time
	}
	return time.Time{}
}
