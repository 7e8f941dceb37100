package plan

import (
	"testing"
	"time"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// TestStepStampKeepsTheCadence: a late step is recorded when it was due (up to half an interval
// late), so five steps of a busy controller take five intervals, not five intervals plus every
// delay.
func TestStepStampKeepsTheCadence(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	spec := sluicev1.CanarySpec{Analysis: sluicev1.CanaryAnalysis{Interval: "10s"}}
	at := func(last *time.Time, now time.Time) time.Time {
		o := Observed{Spec: spec, Now: now}
		if last != nil {
			o.Status.LastStepTime = stamp(*last)
		}
		return stepStamp(o).Time
	}
	last := t0
	for _, tc := range []struct {
		name string
		last *time.Time
		now  time.Time
		want time.Time
	}{
		{"first step: now", nil, t0.Add(3 * time.Second), t0.Add(3 * time.Second)},
		{"on time", &last, t0.Add(10 * time.Second), t0.Add(10 * time.Second)},
		{"2s late: when it was due", &last, t0.Add(12 * time.Second), t0.Add(10 * time.Second)},
		{"8s late: half an interval ago at most", &last, t0.Add(18 * time.Second), t0.Add(13 * time.Second)},
		{"after a hold longer than an interval: now", &last, t0.Add(time.Minute), t0.Add(time.Minute)},
		{"early (a forced tick): now", &last, t0.Add(4 * time.Second), t0.Add(4 * time.Second)},
	} {
		if got := at(tc.last, tc.now); !got.Equal(tc.want) {
			t.Errorf("%s: recorded %s, want %s", tc.name, got.Sub(t0), tc.want.Sub(t0))
		}
	}
	// Five steps, each tick 3 s late: the run still steps every 10 s.
	now, rec := t0, t0
	for i := range 5 {
		now = rec.Add(10*time.Second + 3*time.Second)
		rec = at(&rec, now)
		if want := t0.Add(time.Duration(i+1) * 10 * time.Second); !rec.Equal(want) {
			t.Fatalf("step %d recorded at %s, want %s", i+1, rec.Sub(t0), want.Sub(t0))
		}
	}
}

// TestFirstStepCountsThePodStart: the first step of a run, taken once the canary's pods are ready,
// is recorded at the run's start, so the pods' start counts toward the first interval; never more
// than half an interval before the step (the first weight gets that much traffic before its
// check), and a first step an interval or more after the run's start is recorded when taken.
func TestFirstStepCountsThePodStart(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	spec := sluicev1.CanarySpec{Analysis: sluicev1.CanaryAnalysis{Interval: "10s"}}
	for _, tc := range []struct {
		name  string
		after time.Duration // the first step, after the run's start
		want  time.Duration // recorded at, after the run's start
	}{
		{"pods ready in 3 s: the run's start", 3 * time.Second, 0},
		{"pods ready in 5 s: the run's start, half an interval ago", 5 * time.Second, 0},
		{"pods ready in 8 s: half an interval ago", 8 * time.Second, 3 * time.Second},
		{"an interval after the start (a hold): now", 10 * time.Second, 10 * time.Second},
		{"long after the start: now", time.Minute, time.Minute},
	} {
		o := Observed{Spec: spec, Now: t0.Add(tc.after)}
		o.Status.RunStartTime = stamp(t0)
		got := stepStamp(o).Time
		if want := t0.Add(tc.want); !got.Equal(want) {
			t.Errorf("%s: recorded %s after the start, want %s", tc.name, got.Sub(t0), tc.want)
		}
		if due := got.Add(10 * time.Second); due.Sub(o.Now) < 5*time.Second {
			t.Errorf("%s: the first check is due %s after the first weight, less than half an interval", tc.name, due.Sub(o.Now))
		}
	}
}
