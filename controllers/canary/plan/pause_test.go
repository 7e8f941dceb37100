package plan

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/test/golden"
)

// paused is the hold the controller passes for spec.suspend with traffic on the canary.
var paused = &Hold{Reason: sluicev1.ReasonSuspended, Deliberate: true, Message: "paused (spec.suspend) at canary weight 30"}

// An operator pauses at weight 30 and the canary starts failing: the pause holds only the
// advance; checks keep running every interval and the failed-check threshold rolls it back.
func TestGoldenPausedFailingCanaryRollsBack(t *testing.T) {
	spec := seedSpec()
	spec.ProgressDeadlineSeconds = ptr.To[int32](60)
	w := passingRun(t, spec)
	w.runTo(t, 30)
	w.hold = paused
	w.analysis = failingFrom(0)
	w.runUntil(t, 50, sluicev1.CanaryPhaseFailed)
	last := w.log[len(w.log)-1]
	if w.status.FailedChecks != Threshold(spec) || w.routeWeight != 0 || slices.Contains(w.routeLog, 40) ||
		!strings.Contains(last, "failed checks threshold reached") {
		t.Fatalf("failed %d, route %d, route log %v, last %q", w.status.FailedChecks, w.routeWeight, w.routeLog, last)
	}
	golden.Assert(t, "paused-failing-rolls-back", w.log)
}

// A deliberate pause with a passing canary is not killed by the progress deadline (unlike a
// stall): it holds at its weight with checks running; once resumed the deadline counts from the
// last check, so the run goes on and is promoted instead of rolling back at once.
func TestPausedPassingCanaryWaitsPastTheDeadline(t *testing.T) {
	spec := seedSpec()
	spec.ProgressDeadlineSeconds = ptr.To[int32](120)
	w := passingRun(t, spec)
	w.runTo(t, 30)
	w.hold = paused
	checks := w.checks
	for i := 0; i < 20; i++ {
		w.tick(t)
	}
	if w.status.Phase != sluicev1.CanaryPhaseProgressing || w.status.CanaryWeight != 30 || w.checks-checks < 10 {
		t.Fatalf("paused: phase %s weight %d after %d checks", w.status.Phase, w.status.CanaryWeight, w.checks-checks)
	}
	// Checks with no evidence during the pause: the deadline still waits for the operator.
	w.analysis = func(w *world) Check { return Check{Outcome: sluicev1.CheckNoEvidence, Summary: "no requests"} }
	for i := 0; i < 10; i++ {
		w.tick(t)
	}
	if w.status.Phase != sluicev1.CanaryPhaseProgressing || w.status.CanaryWeight != 30 {
		t.Fatalf("paused without evidence: phase %s weight %d\n%s", w.status.Phase, w.status.CanaryWeight, strings.Join(w.log, "\n"))
	}
	w.analysis = passing
	w.hold = nil
	w.runUntil(t, 50, sluicev1.CanaryPhaseSucceeded)
	if log := strings.Join(w.log, "\n"); strings.Contains(log, EventDeadline) {
		t.Fatalf("deadline fired around a deliberate pause:\n%s", log)
	}
}

// A stall during a pause keeps its deadline: the pause never hides a run that cannot progress.
func TestStallDuringPauseStillEndsAtTheDeadline(t *testing.T) {
	spec := seedSpec()
	spec.ProgressDeadlineSeconds = ptr.To[int32](180)
	w := passingRun(t, spec)
	w.runTo(t, 20)
	w.hold = paused
	w.stall = &Hold{Reason: sluicev1.ReasonTargetNotFound, Message: "configmap podinfo-config-v2 referenced by the target not found"}
	w.runUntil(t, 50, sluicev1.CanaryPhaseFailed)
	if last := w.log[len(w.log)-1]; !strings.Contains(last, "while stalled (TargetNotFound") {
		t.Fatalf("rollback %q", last)
	}
}

// While paused, a promote or retry request waits for the resume (the operator's pause wins over a
// lever pulled meanwhile) and is then acted on once; an abort acts at once.
func TestRequestsWhilePaused(t *testing.T) {
	spec := seedSpec()
	w := passingRun(t, spec)
	w.runTo(t, 30)
	w.spec.Suspend = true
	w.hold = paused
	w.requests = map[string]string{sluicev1.AnnotationPromote: "2026-11-30T12:30:00Z"}
	for i := 0; i < 5; i++ {
		w.tick(t)
	}
	if w.status.Phase != sluicev1.CanaryPhaseProgressing || w.status.CanaryWeight != 30 || w.status.LastHandledRequests[sluicev1.AnnotationPromote] != "" {
		t.Fatalf("paused canary acted on promote: phase %s weight %d handled %v", w.status.Phase, w.status.CanaryWeight, w.status.LastHandledRequests)
	}
	w.spec.Suspend = false
	w.hold = nil
	w.tick(t)
	if w.status.Phase != sluicev1.CanaryPhasePromoting || w.status.LastHandledRequests[sluicev1.AnnotationPromote] == "" {
		t.Fatalf("pending promote not acted on after resume: phase %s handled %v", w.status.Phase, w.status.LastHandledRequests)
	}

	w2 := newWorld(seedSpec())
	w2.analysis = passing
	w2.initialized(t)
	w2.targetRevision = "rev-2"
	w2.runTo(t, 30)
	w2.spec.Suspend = true
	w2.hold = paused
	w2.requests = map[string]string{sluicev1.AnnotationAbort: "2026-11-30T12:30:00Z"}
	w2.tick(t)
	if w2.status.Phase != sluicev1.CanaryPhaseFailed || w2.routeWeight != 0 {
		t.Fatalf("abort while paused: phase %s route weight %d", w2.status.Phase, w2.routeWeight)
	}
}
