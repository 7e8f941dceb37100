package history

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/canary/plan"
	"sluice.dev/sluice/controllers/internal/planevent"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func at(d time.Duration) *metav1.Time { t := metav1.NewTime(t0.Add(d)); return &t }

// spec has n metrics named m0…m(n-1), the first with a minimum, the others with a maximum.
func spec(n int) sluicev1.CanarySpec {
	s := sluicev1.CanarySpec{Analysis: sluicev1.CanaryAnalysis{Interval: "30s"}}
	for i := range n {
		m := sluicev1.CanaryMetric{Name: fmt.Sprintf("m%d", i), Query: "vector(1)", Interval: "1m", ThresholdRange: &sluicev1.ThresholdRange{Max: ptr.To(500.0)}}
		if i == 0 {
			m.Interval, m.ThresholdRange = "", &sluicev1.ThresholdRange{Min: ptr.To(99.0)}
		}
		s.Analysis.Metrics = append(s.Analysis.Metrics, m)
	}
	return s
}

// run drives Record through ticks as the controller does: each tick copies the status it starts
// from, changes it as the planner would, and records.
type run struct {
	t    *testing.T
	spec sluicev1.CanarySpec
	st   sluicev1.CanaryStatus
	now  time.Duration
}

func (r *run) tick(change func(*sluicev1.CanaryStatus), events ...planevent.Event) {
	r.t.Helper()
	r.now += 30 * time.Second
	prev := *r.st.DeepCopy()
	next := r.st.DeepCopy()
	change(next)
	Record(next, Tick{Spec: r.spec, Prev: prev, Events: events, Now: t0.Add(r.now),
		Images: []sluicev1.ContainerImage{{Container: "app", Image: "podinfo:" + next.LastAppliedSpec}}})
	r.st = *next
}

func (r *run) start(revision string) {
	r.tick(func(s *sluicev1.CanaryStatus) {
		s.Phase, s.LastAppliedSpec, s.RunStartTime, s.CanaryWeight = sluicev1.CanaryPhaseProgressing, revision, at(r.now), 0
		s.LastCheck, s.Analysis, s.FailedChecks = nil, nil, 0
		s.LastTransitionTime = at(r.now)
	})
}

// check records a check of every metric of the spec with value v and verdict verdict, then moves
// the weight to next.
func (r *run) check(v string, verdict sluicev1.Verdict, next int32) {
	r.tick(func(s *sluicev1.CanaryStatus) {
		outcome := sluicev1.CheckPassed
		if verdict == sluicev1.VerdictFail {
			outcome = sluicev1.CheckFailed
			s.FailedChecks++
		}
		s.LastCheck = &sluicev1.CheckStatus{Time: *at(r.now), Outcome: outcome, WindowStart: at(r.now - time.Minute)}
		s.Analysis = nil
		for _, m := range r.spec.Analysis.Metrics {
			s.Analysis = append(s.Analysis, sluicev1.MetricResult{Name: m.Name, Value: v, Verdict: verdict, Query: "sum(rate(x[1m]))"})
		}
		s.CanaryWeight = next
	})
}

func (r *run) end(phase sluicev1.CanaryPhase, events ...planevent.Event) {
	r.tick(func(s *sluicev1.CanaryStatus) {
		s.Phase, s.CanaryWeight, s.LastTransitionTime = phase, 0, at(r.now)
	}, events...)
}

// TestRecordFollowsARun pins a run's record: the images at its start, one check per new
// status.lastCheck with the weight it judged and each metric's value and verdict, thresholds
// once per metric, nothing for a tick without a new check, and a summary when it ends.
func TestRecordFollowsARun(t *testing.T) {
	r := &run{t: t, spec: spec(2)}
	r.start("rev1")
	if r.st.Run == nil || r.st.Run.Revision != "rev1" || len(r.st.Run.Images) != 1 || r.st.Run.Images[0].Image != "podinfo:rev1" {
		t.Fatalf("run record after the start: %+v", r.st.Run)
	}
	r.check("99.50", sluicev1.VerdictPass, 10)
	r.check("99.90", sluicev1.VerdictPass, 20)
	r.tick(func(s *sluicev1.CanaryStatus) {}) // a tick without a check (a replay, a wait)
	r.check("80.00", sluicev1.VerdictFail, 20)
	r.end(sluicev1.CanaryPhaseFailed, planevent.Warning(plan.EventRollback, "Rolling back rev1: failed checks threshold reached (1)"))

	run := r.st.Run
	if len(run.Checks) != 3 {
		t.Fatalf("checks = %d, want 3: %+v", len(run.Checks), run.Checks)
	}
	for i, want := range []struct {
		weight  int32
		value   string
		verdict sluicev1.Verdict
	}{{0, "99.50", sluicev1.VerdictPass}, {10, "99.90", sluicev1.VerdictPass}, {20, "80.00", sluicev1.VerdictFail}} {
		c := run.Checks[i]
		if c.Weight != want.weight || len(c.Results) != 2 || c.Results[1].Value != want.value || c.Results[1].Verdict != want.verdict {
			t.Errorf("check %d = %+v, want weight %d and %s %s", i, c, want.weight, want.value, want.verdict)
		}
	}
	if len(run.Metrics) != 2 || run.Metrics[0].Name != "m0" || *run.Metrics[0].ThresholdRange.Min != 99 || run.Metrics[0].Interval != "30s" ||
		run.Metrics[1].Interval != "1m" || run.Metrics[1].Query != "sum(rate(x[1m]))" {
		t.Errorf("metrics = %+v", run.Metrics)
	}
	if run.Outcome != sluicev1.RunRolledBack || run.EndTime == nil {
		t.Errorf("run ended %q at %v", run.Outcome, run.EndTime)
	}
	if len(r.st.Runs) != 1 {
		t.Fatalf("runs = %+v", r.st.Runs)
	}
	sum := r.st.Runs[0]
	if sum.Outcome != sluicev1.RunRolledBack || sum.Checks != 3 || sum.FailedChecks != 1 || sum.MaxWeight != 20 ||
		sum.Reason != "Rolling back rev1: failed checks threshold reached (1)" || sum.EndTime.Sub(sum.StartTime.Time) != 5*30*time.Second {
		t.Errorf("summary = %+v", sum)
	}
	// Ticks after the end change nothing.
	before := r.st.DeepCopy()
	r.tick(func(s *sluicev1.CanaryStatus) {})
	if len(r.st.Runs) != 1 || len(r.st.Run.Checks) != len(before.Run.Checks) {
		t.Errorf("an idle tick changed the history: %+v", r.st.Runs)
	}
}

// TestRecordOutcomes names each way a run ends: promoted, cancelled (the target went back to the
// primary's revision), superseded (a newer revision started its own run), rolled back.
func TestRecordOutcomes(t *testing.T) {
	r := &run{t: t, spec: spec(1)}
	r.start("a")
	r.check("99.9", sluicev1.VerdictPass, 50)
	r.end(sluicev1.CanaryPhaseSucceeded, planevent.Normal(plan.EventSucceeded, "Promotion of a completed"))
	r.start("b")
	r.end(sluicev1.CanaryPhaseSucceeded, planevent.Normal(plan.EventRunCancelled, "Target reverted"))
	r.start("c")
	r.check("99.9", sluicev1.VerdictPass, 10)
	r.tick(func(s *sluicev1.CanaryStatus) {
		s.LastAppliedSpec, s.RunStartTime = "d", at(r.now)
	}, planevent.Warning(plan.EventRestarted, "New revision d during the run of c"))
	r.check("1", sluicev1.VerdictFail, 0)
	r.end(sluicev1.CanaryPhaseFailed)

	var got []string
	for _, s := range r.st.Runs {
		got = append(got, fmt.Sprintf("%s %s %q", s.Revision, s.Outcome, s.Reason))
	}
	want := []string{
		`a Promoted "Promotion of a completed"`,
		`b Cancelled "Target reverted"`,
		`c Superseded "New revision d during the run of c"`,
		`d RolledBack "rolled back"`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("runs:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if r.st.Run.Revision != "d" || len(r.st.Run.Checks) != 1 {
		t.Errorf("the last run's record: %+v", r.st.Run)
	}
}

// TestRecordKeepsItsBounds runs more runs and checks than the history keeps: the last 10 runs, the
// latest 60 checks of the run with the count of the others, and reasons and queries cut.
func TestRecordKeepsItsBounds(t *testing.T) {
	r := &run{t: t, spec: spec(3)}
	for i := range 12 {
		r.start(fmt.Sprintf("rev%d", i))
		for range 80 {
			r.check("99.9", sluicev1.VerdictPass, 10)
		}
		r.end(sluicev1.CanaryPhaseFailed, planevent.Warning(plan.EventRollback, strings.Repeat("é", 2000)))
	}
	if len(r.st.Runs) != sluicev1.MaxRunSummaries || r.st.Runs[0].Revision != "rev2" || r.st.Runs[9].Revision != "rev11" {
		t.Fatalf("runs kept: %d, first %s", len(r.st.Runs), r.st.Runs[0].Revision)
	}
	run := r.st.Run
	if len(run.Checks) != sluicev1.MaxRunChecks || run.DroppedChecks != 20 || r.st.Runs[9].Checks != 80 {
		t.Errorf("checks kept %d, dropped %d, summary counts %d", len(run.Checks), run.DroppedChecks, r.st.Runs[9].Checks)
	}
	if !run.Checks[sluicev1.MaxRunChecks-1].Time.Equal(r.st.LastCheck.Time.DeepCopy()) {
		t.Errorf("the newest check is not the last kept")
	}
	if reason := r.st.Runs[9].Reason; len(reason) > maxReason || !strings.HasSuffix(reason, "…") || !strings.HasPrefix(reason, "éé") {
		t.Errorf("reason of %d bytes: %q…", len(reason), reason[:10])
	}
}

// TestRecordAlignsMetricsAddedDuringARun keeps results aligned with run.metrics when a metric
// appears in a later check, and leaves an empty result for a metric a check did not judge.
func TestRecordAlignsMetricsAddedDuringARun(t *testing.T) {
	r := &run{t: t, spec: spec(1)}
	r.start("rev")
	r.check("99.9", sluicev1.VerdictPass, 10)
	r.tick(func(s *sluicev1.CanaryStatus) {
		s.LastCheck = &sluicev1.CheckStatus{Time: *at(r.now), Outcome: sluicev1.CheckFailed}
		s.Analysis = []sluicev1.MetricResult{{Name: "rollout-webhooks", Verdict: sluicev1.VerdictFail}}
	})
	checks := r.st.Run.Checks
	if len(r.st.Run.Metrics) != 2 || r.st.Run.Metrics[1].Name != "rollout-webhooks" || r.st.Run.Metrics[1].ThresholdRange != nil {
		t.Fatalf("metrics = %+v", r.st.Run.Metrics)
	}
	if len(checks[0].Results) != 1 || len(checks[1].Results) != 2 || checks[1].Results[0] != (sluicev1.CheckValue{}) ||
		checks[1].Results[1].Verdict != sluicev1.VerdictFail {
		t.Errorf("checks = %+v", checks)
	}
}
