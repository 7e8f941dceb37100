package canary

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// TestRunHistoryInStatus runs a good and a bad release through the controller on a real
// apiserver and reads the history it keeps in status: the bad run's record holds every check with
// the weight it judged and the metric's value and verdict, the images it delivers and the ones it
// replaces; status.runs summarises both runs.
func TestRunHistoryInStatus(t *testing.T) {
	h := newHarness(t)
	h.analyzer.fail = func(w int32) bool { return w >= 20 }
	h.app(2, "6.0.0")
	h.create(h.canaryFor())
	h.runUntil(sluicev1.CanaryPhaseInitialized, 10)
	if c := h.canary(); c.Status.Run != nil || len(c.Status.Runs) != 0 {
		t.Fatalf("history before any run: %+v %+v", c.Status.Run, c.Status.Runs)
	}
	h.analyzer.fail = nil
	h.setImage("6.0.1")
	h.runUntil(sluicev1.CanaryPhaseSucceeded, 40)
	h.analyzer.fail = func(w int32) bool { return w >= 20 }
	h.setImage("6.0.2-bad")
	h.runUntil(sluicev1.CanaryPhaseFailed, 40)

	st := h.canary().Status
	run := st.Run
	if run == nil || run.Revision != st.LastAppliedSpec || run.Outcome != sluicev1.RunRolledBack || run.EndTime == nil {
		t.Fatalf("run record: %+v", run)
	}
	if len(run.Images) != 1 || run.Images[0] != (sluicev1.ContainerImage{Container: "app", Image: "ghcr.io/stefanprodan/podinfo:6.0.2-bad"}) ||
		len(run.PrimaryImages) != 1 || !strings.HasSuffix(run.PrimaryImages[0].Image, ":6.0.1") {
		t.Errorf("images %+v, primary %+v", run.Images, run.PrimaryImages)
	}
	if len(run.Metrics) != 1 || run.Metrics[0].Name != sluicev1.MetricRequestSuccessRate || *run.Metrics[0].ThresholdRange.Min != 99 ||
		run.Metrics[0].Interval != "1m" {
		t.Errorf("metrics %+v", run.Metrics)
	}
	var checks []string
	for _, c := range run.Checks {
		checks = append(checks, fmt.Sprintf("%d:%s:%s", c.Weight, c.Results[0].Value, c.Results[0].Verdict))
	}
	// The run steps to 10, passes its check there, steps to 20 and fails five checks there.
	want := []string{"10:99.90:Pass", "20:80.00:Fail", "20:80.00:Fail", "20:80.00:Fail", "20:80.00:Fail", "20:80.00:Fail"}
	if !slices.Equal(checks, want) {
		t.Errorf("checks %v, want %v", checks, want)
	}
	if len(st.Runs) != 2 {
		t.Fatalf("runs: %+v", st.Runs)
	}
	good, bad := st.Runs[0], st.Runs[1]
	if good.Outcome != sluicev1.RunPromoted || good.FailedChecks != 0 || good.MaxWeight != 50 || !strings.HasSuffix(good.Images[0].Image, ":6.0.1") {
		t.Errorf("good run: %+v", good)
	}
	if bad.Outcome != sluicev1.RunRolledBack || bad.FailedChecks != 5 || bad.Checks != 6 || !strings.Contains(bad.Reason, "failed checks threshold reached (5)") {
		t.Errorf("bad run: %+v", bad)
	}
}
