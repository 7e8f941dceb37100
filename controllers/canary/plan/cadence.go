package plan

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// stepStamp is the time a check or step taken now is recorded at (status.lastStepTime), which
// the next one is due an interval after. When the tick comes late — a busy controller's queue,
// thousands of Canaries stepping at once — the step is recorded at the time it was due, so the
// run keeps its cadence instead of adding every delay to its length; but never earlier than half
// an interval ago, so each weight still gets at least half an interval of traffic before the next
// check. A check early (a forced tick) or after a hold longer than an interval is recorded now;
// the first step of a run, see firstStepStamp.
func stepStamp(o Observed) *metav1.Time {
	last := o.Status.LastStepTime
	if last == nil {
		return firstStepStamp(o)
	}
	due := last.Add(Interval(o.Spec))
	if o.Now.Before(due) || o.Now.Sub(due) >= Interval(o.Spec) {
		return stamp(o.Now) // early (a forced tick), or after a hold rather than a queue
	}
	if floor := o.Now.Add(-Interval(o.Spec) / 2); due.Before(floor) {
		return stamp(floor)
	}
	return stamp(due)
}

// firstStepStamp is stepStamp for the first step of a run, taken once the canary it scaled up at
// the run's start is ready (and the pre-rollout gate passed). The wait for the canary's pods counts
// toward the first interval: the step is recorded at the run's start (status.runStartTime), so a
// run lasts interval × steps, not the pods' start plus interval × steps; but never earlier than
// half an interval ago, so the first weight still gets at least half an interval of traffic
// before its check, as a late step does. Metric windows still start no earlier than the run. A
// first step an interval or more after the run's start (a hold, a slow gate) is recorded now.
func firstStepStamp(o Observed) *metav1.Time {
	start := o.Status.RunStartTime
	if start == nil || o.Now.Before(start.Time) || o.Now.Sub(start.Time) >= Interval(o.Spec) {
		return stamp(o.Now)
	}
	if floor := o.Now.Add(-Interval(o.Spec) / 2); start.Time.Before(floor) {
		return stamp(floor)
	}
	return stamp(start.Time)
}
