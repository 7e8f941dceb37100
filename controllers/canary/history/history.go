// Package history keeps a Canary's run history in its status: the run in flight (or the last
// one) with every check, and a summary of the last finished runs, within fixed bounds. It is pure:
// Record derives the history from what one tick changed in the status, so the planner that
// decides the tick needs to know nothing about it.
package history

import (
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/canary/plan"
	"sluice.dev/sluice/controllers/internal/planevent"
)

// Byte limits of the free texts a record copies.
const (
	maxReason = 1024
	maxQuery  = 1024
)

// Tick is what a reconcile tick knows beyond its next status.
type Tick struct {
	// Spec of the Canary.
	Spec sluicev1.CanarySpec
	// Prev is the status the tick started from.
	Prev sluicev1.CanaryStatus
	// Events the tick records; a run's end reason is taken from them.
	Events []planevent.Event
	// Images and PrimaryImages are the target's and the primary's container images, recorded when
	// a run starts.
	Images, PrimaryImages []sluicev1.ContainerImage
	// Now is the tick's time, the end of a run whose phase has no transition time.
	Now time.Time
}

// Record updates next.Run and next.Runs from the change between t.Prev and next: a new
// status.runStartTime starts a new run record (a run still open in the old record is summarised
// as superseded), a new status.lastCheck appends a check, and the phase reaching Succeeded or
// Failed ends the open run and summarises it. A tick that changes none of these leaves the
// history as it is, so replaying a tick never records a check twice.
func Record(next *sluicev1.CanaryStatus, t Tick) {
	if next.RunStartTime != nil && (next.Run == nil || !next.Run.StartTime.Equal(next.RunStartTime)) {
		if open(next.Run) {
			end(next, sluicev1.RunSuperseded, next.RunStartTime.Time, reason(t.Events, plan.EventRestarted, "a newer revision started its own run"))
		}
		next.Run = &sluicev1.RunRecord{
			Revision:      next.LastAppliedSpec,
			StartTime:     *next.RunStartTime.DeepCopy(),
			Images:        capImages(t.Images),
			PrimaryImages: capImages(t.PrimaryImages),
		}
	}
	if open(next.Run) && next.LastCheck != nil && !equality.Semantic.DeepEqual(t.Prev.LastCheck, next.LastCheck) {
		appendCheck(next.Run, t.Spec, t.Prev.CanaryWeight, next.LastCheck, next.Analysis)
	}
	if open(next.Run) && (next.Phase == sluicev1.CanaryPhaseSucceeded || next.Phase == sluicev1.CanaryPhaseFailed) {
		at := t.Now
		if next.LastTransitionTime != nil {
			at = next.LastTransitionTime.Time
		}
		switch {
		case next.Phase == sluicev1.CanaryPhaseFailed:
			end(next, sluicev1.RunRolledBack, at, reason(t.Events, plan.EventRollback, "rolled back"))
		case has(t.Events, plan.EventRunCancelled):
			end(next, sluicev1.RunCancelled, at, reason(t.Events, plan.EventRunCancelled, "cancelled"))
		default:
			end(next, sluicev1.RunPromoted, at, reason(t.Events, plan.EventSucceeded, "promoted"))
		}
	}
}

func open(r *sluicev1.RunRecord) bool { return r != nil && r.EndTime == nil }

// appendCheck adds a check to run: the weight it judged, its outcome and window, and per metric
// the value and verdict, aligned with run.Metrics (a metric seen for the first time is added
// there with its threshold from the spec). The oldest checks go beyond MaxRunChecks.
func appendCheck(run *sluicev1.RunRecord, spec sluicev1.CanarySpec, weight int32, lc *sluicev1.CheckStatus, results []sluicev1.MetricResult) {
	c := sluicev1.CheckRecord{Time: *lc.Time.DeepCopy(), Weight: weight, Outcome: lc.Outcome, WindowStart: lc.WindowStart.DeepCopy()}
	for _, r := range results {
		i := metricIndex(run, spec, r)
		if i < 0 {
			continue // beyond MaxRunMetrics
		}
		run.Metrics[i].Query = cut(r.Query, maxQuery)
		for len(c.Results) <= i {
			c.Results = append(c.Results, sluicev1.CheckValue{})
		}
		c.Results[i] = sluicev1.CheckValue{Value: r.Value, PrimaryValue: r.PrimaryValue, Verdict: r.Verdict}
	}
	run.Checks = append(run.Checks, c)
	if drop := len(run.Checks) - sluicev1.MaxRunChecks; drop > 0 {
		run.Checks = append([]sluicev1.CheckRecord(nil), run.Checks[drop:]...)
		run.DroppedChecks += int32(drop)
	}
}

// metricIndex is the index of r's metric in run.Metrics, added when missing; -1 when the record
// is full.
func metricIndex(run *sluicev1.RunRecord, spec sluicev1.CanarySpec, r sluicev1.MetricResult) int {
	for i, m := range run.Metrics {
		if m.Name == r.Name {
			return i
		}
	}
	if len(run.Metrics) >= sluicev1.MaxRunMetrics {
		return -1
	}
	m := sluicev1.RunMetric{Name: r.Name}
	for _, sm := range spec.Analysis.Metrics {
		if sm.Name != r.Name {
			continue
		}
		m.ThresholdRange = sm.ThresholdRange.DeepCopy()
		m.CompareToPrimary = sm.CompareToPrimary.DeepCopy()
		m.Interval = sm.Interval
		if m.Interval == "" {
			m.Interval = plan.Interval(spec).String()
		}
	}
	run.Metrics = append(run.Metrics, m)
	return len(run.Metrics) - 1
}

// end closes the open run record and appends its summary to next.Runs, keeping the last
// MaxRunSummaries.
func end(next *sluicev1.CanaryStatus, outcome sluicev1.RunOutcome, at time.Time, why string) {
	run := next.Run
	t := metav1.NewTime(at)
	run.EndTime, run.Outcome = &t, outcome
	sum := sluicev1.RunSummary{
		Revision: run.Revision, Outcome: outcome, StartTime: run.StartTime, EndTime: t, Reason: cut(why, maxReason),
		Checks: int32(len(run.Checks)) + run.DroppedChecks, Images: run.Images,
	}
	for _, c := range run.Checks {
		if c.Outcome == sluicev1.CheckFailed {
			sum.FailedChecks++
		}
		sum.MaxWeight = max(sum.MaxWeight, c.Weight)
	}
	// status.failedChecks also counts failed pre-rollout checks and checks no longer kept (in
	// Total mode, the default; Consecutive mode resets it after a passing check).
	sum.FailedChecks = max(sum.FailedChecks, next.FailedChecks)
	runs := append(append([]sluicev1.RunSummary(nil), next.Runs...), sum)
	if drop := len(runs) - sluicev1.MaxRunSummaries; drop > 0 {
		runs = runs[drop:]
	}
	next.Runs = runs
}

// reason is the message of the first event with the given reason, else fallback.
func reason(events []planevent.Event, r, fallback string) string {
	for _, e := range events {
		if e.Reason == r {
			return e.Message
		}
	}
	return fallback
}

func has(events []planevent.Event, r string) bool {
	for _, e := range events {
		if e.Reason == r {
			return true
		}
	}
	return false
}

func capImages(in []sluicev1.ContainerImage) []sluicev1.ContainerImage {
	if len(in) > sluicev1.MaxRunImages {
		in = in[:sluicev1.MaxRunImages]
	}
	return append([]sluicev1.ContainerImage(nil), in...)
}

// cut shortens s to at most n bytes, on a rune boundary, marking the cut with "…".
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n-len("…")]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "…"
}
