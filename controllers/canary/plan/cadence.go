package plan

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// stepStamp is the time a check or step taken now is recorded at (status.lastStepTime), which
// the next one is due an interval after. When the tick comes late — a busy controller's queue,
// thousands of Canaries stepping at once — the step is recorded at the time it was due, so the
// run keeps its cadence instead of adding every delay to its length; but never earlier than half
// an interval ago, so each weight still gets at least half an interval of traffic before the next
// check. The first check of a run, and one after a hold, are recorded now.
func stepStamp(o Observed) *metav1.Time {
	last := o.Status.LastStepTime
	if last == nil {
		return stamp(o.Now)
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
