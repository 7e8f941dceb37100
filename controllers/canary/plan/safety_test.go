package plan

import (
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/test/golden"
)

// noBackAndForth fails when the route's canary weight went down and then up again within a run:
// traffic must never move backwards then forwards.
func noBackAndForth(t *testing.T, w *world) {
	t.Helper()
	for i := 2; i < len(w.routeLog); i++ {
		if w.routeLog[i-1] < w.routeLog[i-2] && w.routeLog[i] > w.routeLog[i-1] {
			t.Fatalf("traffic moved backwards then forwards: route weights %v\n%s", w.routeLog, strings.Join(w.log, "\n"))
		}
	}
}

// runTo ticks until the status weight is at least weight.
func (w *world) runTo(t *testing.T, weight int32) {
	t.Helper()
	for i := 0; i < 100 && w.status.CanaryWeight < weight; i++ {
		w.tick(t)
	}
	if w.status.CanaryWeight < weight {
		t.Fatalf("weight %d, never reached %d\n%s", w.status.CanaryWeight, weight, strings.Join(w.log, "\n"))
	}
}

// The canary loses its ready pods at weight 30: its weight goes to 0 in that same tick, no check
// runs on it, and the run rolls back at the progress deadline.
func TestGoldenCanaryUnreadyAtWeight30(t *testing.T) {
	spec := seedSpec()
	spec.ProgressDeadlineSeconds = ptr.To[int32](300)
	w := passingRun(t, spec)
	w.runTo(t, 30)
	w.canaryNeverReady = true
	d := w.tick(t)
	if w.routeWeight != 0 || !slices.Contains(d.Actions, ActionSetWeights) {
		t.Fatalf("route weight %d after the canary lost readiness, want 0 in the same tick", w.routeWeight)
	}
	checks := w.checks
	w.runUntil(t, 300, sluicev1.CanaryPhaseFailed)
	if w.checks != checks {
		t.Fatalf("%d checks ran on an unready canary", w.checks-checks)
	}
	if msg := w.log[len(w.log)-1]; !strings.Contains(msg, "progress deadline exceeded waiting for the canary") {
		t.Fatalf("rollback does not name the cause: %s", msg)
	}
	golden.Assert(t, "canary-unready-at-30", w.log)
}

// A progression window closes at weight 30 while the canary starts failing: checks keep running
// every interval and the failed-check threshold rolls the run back.
func TestGoldenWindowClosedMidRunStillRollsBack(t *testing.T) {
	w := newWorld(seedSpec())
	w.analysis = failingFrom(40) // passes below 40
	w.initialized(t)
	w.targetRevision = "rev-2"
	w.runTo(t, 30)
	w.hold = &Hold{Reason: sluicev1.ReasonOutsideWindow, Message: "outside progression windows; next window opens at 2026-12-01T09:00:00Z"}
	w.analysis = failingFrom(0)
	w.runUntil(t, 50, sluicev1.CanaryPhaseFailed)
	if w.status.FailedChecks != 5 || w.routeWeight != 0 || slices.Contains(w.routeLog, 40) {
		t.Fatalf("failed %d, route %d, route log %v", w.status.FailedChecks, w.routeWeight, w.routeLog)
	}
	golden.Assert(t, "window-closed-mid-run", w.log)
}

// A window closed mid-run with passing checks holds the weight without ending the run: passing
// checks are progress, and the run advances when the window opens.
func TestWindowHoldWithPassingChecksWaits(t *testing.T) {
	spec := seedSpec()
	spec.ProgressDeadlineSeconds = ptr.To[int32](120)
	w := passingRun(t, spec)
	w.runTo(t, 30)
	w.hold = &Hold{Reason: sluicev1.ReasonOutsideWindow, Message: "outside progression windows"}
	checks := w.checks
	for i := 0; i < 20; i++ {
		w.tick(t)
	}
	if w.status.Phase != sluicev1.CanaryPhaseProgressing || w.status.CanaryWeight != 30 || w.checks-checks < 10 {
		t.Fatalf("phase %s weight %d after %d checks held", w.status.Phase, w.status.CanaryWeight, w.checks-checks)
	}
	w.hold = nil
	w.runUntil(t, 50, sluicev1.CanaryPhaseSucceeded)
}

// A stall (here a ConfigMap of the new revision missing) with traffic on the canary: no advance,
// and the run ends in a rollback at the progress deadline naming the stall, even while checks
// pass.
func TestGoldenStallWithTrafficEndsAtDeadline(t *testing.T) {
	spec := seedSpec()
	spec.ProgressDeadlineSeconds = ptr.To[int32](180)
	w := passingRun(t, spec)
	w.runTo(t, 20)
	w.stall = &Hold{Reason: sluicev1.ReasonTargetNotFound, Message: "configmap podinfo-config-v2 referenced by the target not found"}
	w.runUntil(t, 50, sluicev1.CanaryPhaseFailed)
	last := w.log[len(w.log)-1]
	if !strings.Contains(last, "while stalled (TargetNotFound: configmap podinfo-config-v2") || slices.Contains(w.routeLog, 30) {
		t.Fatalf("rollback %q, route log %v", last, w.routeLog)
	}
	golden.Assert(t, "stall-with-traffic", w.log)
}

func skippedEverywhere(*world) Check {
	return Check{Outcome: sluicev1.CheckNoEvidence, Summary: "request-success-rate: Skipped (canary served 0 requests in the last 1m, fewer than minRequestCount 10)",
		Results: []sluicev1.MetricResult{{Name: "request-success-rate", Verdict: sluicev1.VerdictSkipped}}}
}

// All-Skipped checks hold the step: the canary that served nothing is never promoted; the run
// ends at the progress deadline. With analysis.advanceWithoutData the steps advance, and the
// status and the events say so.
func TestGoldenAllSkippedChecksHoldTheStep(t *testing.T) {
	spec := seedSpec()
	spec.ProgressDeadlineSeconds = ptr.To[int32](240)
	w := newWorld(spec)
	w.analysis = skippedEverywhere
	w.initialized(t)
	w.targetRevision = "rev-2"
	w.runUntil(t, 50, sluicev1.CanaryPhaseFailed)
	if !slices.Equal(w.weightsSeen, []int32{0, 10}) || w.routeWeight != 0 || w.primaryRevision != "rev-1" {
		t.Fatalf("weights %v, primary %s: a canary without evidence advanced", w.weightsSeen, w.primaryRevision)
	}
	golden.Assert(t, "all-skipped-holds", w.log)

	spec.Analysis.AdvanceWithoutData = true
	w = newWorld(spec)
	w.analysis = skippedEverywhere
	w.initialized(t)
	w.targetRevision = "rev-2"
	w.runTo(t, 20)
	if w.status.LastCheck == nil || !w.status.LastCheck.AdvancedWithoutData || !strings.Contains(strings.Join(w.log, "\n"), "["+EventNoData+"]") {
		t.Fatalf("advancing without data is not said: %+v", w.status.LastCheck)
	}
	w.runUntil(t, 50, sluicev1.CanaryPhaseSucceeded)
	// One warning for the streak of checks without evidence, not one per step (5 steps here).
	if n := strings.Count(strings.Join(w.log, "\n"), "["+EventNoData+"]"); n != 1 {
		t.Fatalf("%d %s events in one run without data, want 1:\n%s", n, EventNoData, strings.Join(w.log, "\n"))
	}
}

func metricsDown(*world) Check {
	return Check{Outcome: sluicev1.CheckError, Summary: "request-success-rate: Error (metrics server unreachable: http://prometheus:9090: connection refused)",
		Results: []sluicev1.MetricResult{{Name: "request-success-rate", Verdict: sluicev1.VerdictError}}}
}

// Prometheus unreachable for two checks at weight 30: the step holds (no failed check, no
// advance) and the run continues when it answers again. Unreachable past the error limit: the run
// rolls back naming "metrics unavailable".
func TestGoldenMetricsUnavailable(t *testing.T) {
	w := newWorld(seedSpec())
	w.analysis = passing
	w.initialized(t)
	w.targetRevision = "rev-2"
	w.runTo(t, 30)
	w.analysis = metricsDown
	for w.checks < 0 || w.status.ConsecutiveErrors < 2 {
		w.tick(t)
	}
	if w.status.CanaryWeight != 30 || w.status.FailedChecks != 0 {
		t.Fatalf("weight %d failed %d while metrics were down", w.status.CanaryWeight, w.status.FailedChecks)
	}
	w.analysis = passing
	w.runUntil(t, 50, sluicev1.CanaryPhaseSucceeded)
	golden.Assert(t, "metrics-unavailable-returns", w.log)

	w = newWorld(seedSpec())
	w.analysis = passing
	w.initialized(t)
	w.targetRevision = "rev-2"
	w.runTo(t, 30)
	w.analysis = metricsDown
	w.runUntil(t, 50, sluicev1.CanaryPhaseFailed)
	if last := w.log[len(w.log)-1]; !strings.Contains(last, "metrics unavailable for 4 consecutive checks") || w.status.FailedChecks != 0 {
		t.Fatalf("rollback %q, failed checks %d", last, w.status.FailedChecks)
	}
	golden.Assert(t, "metrics-unavailable-rollback", w.log)
}

// Checks keep running while Promoting with stepWeightPromotion; a failure past the threshold rolls
// back and restores the primary to the last promoted revision.
func TestGoldenFailureDuringStepWeightPromotionRestoresPrimary(t *testing.T) {
	spec := seedSpec()
	spec.Analysis.StepWeightPromotion = 10
	spec.Analysis.Threshold = 2
	w := passingRun(t, spec)
	w.runUntil(t, 50, sluicev1.CanaryPhasePromoting)
	w.runTo(t, 0) // no-op: weight is 50
	w.analysis = func(w *world) Check {
		if w.primaryRevision == "rev-2" {
			return failingFrom(0)(w)
		}
		return passing(w)
	}
	w.runUntil(t, 50, sluicev1.CanaryPhaseFailed)
	for i := 0; i < 3; i++ {
		w.tick(t)
	}
	if w.primaryRevision != "rev-1" || w.routeWeight != 0 || w.status.LastPromotedSpec != "rev-1" || w.restores == 0 {
		t.Fatalf("after a failed promotion: primary %s, route %d, promoted %s, restores %d", w.primaryRevision, w.routeWeight,
			w.status.LastPromotedSpec, w.restores)
	}
	golden.Assert(t, "promotion-check-fails", w.log)
}

// A run whose writes keep failing (a route write refused by an admission policy: an error, not a
// stall) ends at the progress deadline, and the rollback names the error, as it names a stall.
func TestDeadlineNamesTheFailingWrites(t *testing.T) {
	spec := seedSpec()
	spec.ProgressDeadlineSeconds = ptr.To[int32](180)
	w := passingRun(t, spec)
	w.runTo(t, 20)
	o := w.observe()
	o.Now = o.Status.LastProgressTime.Add(181 * time.Second)
	o.Status.Conditions = []metav1.Condition{{Type: sluicev1.ConditionReady, Status: metav1.ConditionFalse, Reason: sluicev1.ReasonReconcileError,
		Message: "SetWeights: applying HTTPRoute podinfo: denied by ValidatingAdmissionPolicy br13-freeze-routes"}}
	d := Decide(o)
	var msgs []string
	for _, e := range d.Events {
		msgs = append(msgs, e.Message)
	}
	if d.Status.Phase != sluicev1.CanaryPhaseFailed || !strings.Contains(strings.Join(msgs, "\n"),
		"progress deadline exceeded while its writes failed (ReconcileError: SetWeights: applying HTTPRoute podinfo: denied") {
		t.Fatalf("phase %s, events:\n%s", d.Status.Phase, strings.Join(msgs, "\n"))
	}
}

// The primary loses its ready pods mid-run at weight 20: the run takes no further step (its share
// never moves to the canary under analysis, and nothing is promoted), checks go on, and the run
// rolls back at the progress deadline naming the primary. When it recovers first, the run goes on.
func TestPrimaryUnreadyMidRunHoldsTheRun(t *testing.T) {
	spec := seedSpec()
	spec.ProgressDeadlineSeconds = ptr.To[int32](300)
	w := passingRun(t, spec)
	w.runTo(t, 20)
	w.primaryDown = true
	checks := w.checks
	w.runUntil(t, 50, sluicev1.CanaryPhaseFailed)
	last := w.log[len(w.log)-1]
	if slices.Contains(w.routeLog, 30) || w.checks == checks || !strings.Contains(last, "while stalled (PrimaryUnready: primary has 0/2 ready pods") {
		t.Fatalf("route log %v, %d checks while held, rollback %q", w.routeLog, w.checks-checks, last)
	}

	w = newWorld(spec)
	w.analysis = passing
	w.initialized(t)
	w.targetRevision = "rev-2"
	w.runTo(t, 20)
	w.primaryDown = true
	for i := 0; i < 3; i++ {
		w.tick(t)
	}
	if w.routeWeight != 20 {
		t.Fatalf("weight %d while the primary is down, want 20 (held)", w.routeWeight)
	}
	w.primaryDown = false
	w.runUntil(t, 60, sluicev1.CanaryPhaseSucceeded)
}
