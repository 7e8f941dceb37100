package plan

import (
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

var edgeNow = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func readyWorkload(rev string) Workload {
	return Workload{Exists: true, Revision: rev, Desired: 2, Ready: 2, Updated: 2, RolledOut: true}
}

// TestMissingPrimaryIsCreatedThenInitialized: a missing primary is created from the target, and
// the Canary initializes again whatever its phase: no traffic decision before its pods are ready.
func TestMissingPrimaryIsCreatedThenInitialized(t *testing.T) {
	for _, phase := range []sluicev1.CanaryPhase{"", sluicev1.CanaryPhaseSucceeded, sluicev1.CanaryPhaseFailed} {
		o := Observed{Now: edgeNow, Spec: seedSpec(), Revision: "r1", Canary: readyWorkload("r1"),
			Status:     sluicev1.CanaryStatus{Phase: phase, LastAppliedSpec: "r1", LastPromotedSpec: "r1", CanaryWeight: 0},
			RouteKnown: true, RouteWeight: 30}
		d := Decide(o)
		if d.Status.Phase != sluicev1.CanaryPhaseInitializing || !slices.Equal(d.Actions, []Action{ActionCreatePrimary}) ||
			d.RequeueAfter != PollInterval {
			t.Fatalf("phase %q: got phase %s actions %v requeue %s; want Initializing, [CreatePrimary], poll", phase, d.Status.Phase, d.Actions, d.RequeueAfter)
		}
		if len(d.Events) != 1 || d.Events[0].Reason != EventPrimaryCreated || !strings.Contains(d.Events[0].Message, "user-service-primary from user-service at revision r1") {
			t.Fatalf("phase %q: events %+v", phase, d.Events)
		}
	}
}

// TestInitializationWaitsForTheMetricsServer: while a metrics server does not answer, the Canary
// stays Initializing with a hold naming it, even with a ready primary.
func TestInitializationWaitsForTheMetricsServer(t *testing.T) {
	o := Observed{Now: edgeNow, Spec: seedSpec(), Revision: "r1", Primary: readyWorkload("r1"), Canary: readyWorkload("r1"),
		MetricsServerDown: "http://prometheus:9090: connection refused"}
	d := Decide(o)
	if d.Status.Phase != sluicev1.CanaryPhaseInitializing || len(d.Actions) != 0 || d.Hold == nil ||
		d.Hold.Reason != sluicev1.ReasonMetricsUnreachable || !strings.Contains(d.Hold.Message, "connection refused") {
		t.Fatalf("got phase %s actions %v hold %+v", d.Status.Phase, d.Actions, d.Hold)
	}
	o.MetricsServerDown = ""
	if d := Decide(o); d.Status.Phase != sluicev1.CanaryPhaseInitialized {
		t.Fatalf("metrics server answers: phase %s, want Initialized", d.Status.Phase)
	}
}

// TestIgnoredRequestsInFixedOrder: requests that apply to nothing are reported in precedence
// order (abort, promote, retry), the same on every run.
func TestIgnoredRequestsInFixedOrder(t *testing.T) {
	o := Observed{Now: edgeNow, Spec: seedSpec(), Revision: "r1", Primary: readyWorkload("r1"), Canary: readyWorkload("r1"),
		Status:   sluicev1.CanaryStatus{Phase: sluicev1.CanaryPhaseInitialized, LastAppliedSpec: "r1", LastPromotedSpec: "r1"},
		Requests: map[string]string{sluicev1.AnnotationRetry: "t1", sluicev1.AnnotationPromote: "t1", sluicev1.AnnotationAbort: "t1"}}
	for i := 0; i < 20; i++ {
		d := Decide(o)
		var got []string
		for _, e := range d.Events {
			got = append(got, strings.Fields(e.Message)[1])
		}
		want := []string{sluicev1.AnnotationAbort + "=t1", sluicev1.AnnotationPromote + "=t1", sluicev1.AnnotationRetry + "=t1"}
		if !slices.Equal(got, want) {
			t.Fatalf("run %d: ignored requests in order %v, want %v", i, got, want)
		}
	}
}

// TestDeletionSubMachine walks the deletion phases for each spec and target state.
func TestDeletionSubMachine(t *testing.T) {
	revert := seedSpec()
	revert.RevertOnDeletion = true
	scaledDown := readyWorkload("")
	scaledDown.Desired, scaledDown.Ready = 0, 0
	notReady := readyWorkload("")
	notReady.Ready = 0
	running := sluicev1.CanaryStatus{Phase: sluicev1.CanaryPhaseProgressing, CanaryWeight: 20}
	terminating := sluicev1.CanaryStatus{Phase: sluicev1.CanaryPhaseTerminating, LastTransitionTime: &metav1.Time{Time: edgeNow.Add(-time.Minute)}}
	tests := []struct {
		name      string
		spec      sluicev1.CanarySpec
		status    sluicev1.CanaryStatus
		target    Workload
		phase     sluicev1.CanaryPhase
		actions   []Action
		events    []string
		holdsWith string
	}{
		{"no revert: orphan and go", seedSpec(), running, readyWorkload(""), sluicev1.CanaryPhaseTerminated,
			[]Action{ActionOrphanObjects, ActionReleaseFinalizer}, []string{sluicev1.ReasonTerminating, sluicev1.ReasonTerminating}, ""},
		{"revert, target scaled down: scale it up", revert, running, scaledDown, sluicev1.CanaryPhaseTerminating,
			[]Action{ActionScaleCanaryUp}, []string{sluicev1.ReasonTerminating}, ""},
		{"revert, target not ready: wait", revert, terminating, notReady, sluicev1.CanaryPhaseTerminating,
			nil, nil, "Waiting for user-service to become ready"},
		{"revert, target ready: restore, remove, go", revert, terminating, readyWorkload(""), sluicev1.CanaryPhaseTerminated,
			[]Action{ActionRestoreRouting, ActionRemovePrimaryObjects, ActionReleaseFinalizer}, nil, ""},
		{"revert, target gone: remove and go", revert, running, Workload{}, sluicev1.CanaryPhaseTerminated,
			[]Action{ActionRemovePrimaryObjects, ActionReleaseFinalizer}, []string{sluicev1.ReasonTerminating, EventTargetGone}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := DecideDeletion(DeletionObserved{Now: edgeNow, Spec: tt.spec, Status: tt.status, Target: tt.target})
			var events []string
			for _, e := range d.Events {
				events = append(events, e.Reason)
			}
			if d.Status.Phase != tt.phase || !slices.Equal(d.Actions, tt.actions) || !slices.Equal(events, tt.events) {
				t.Fatalf("got phase %s actions %v events %v; want %s %v %v", d.Status.Phase, d.Actions, events, tt.phase, tt.actions, tt.events)
			}
			if tt.holdsWith != "" && (d.Hold == nil || !strings.Contains(d.Hold.Message, tt.holdsWith)) {
				t.Fatalf("hold %+v, want one saying %q", d.Hold, tt.holdsWith)
			}
			if tt.status.Phase != sluicev1.CanaryPhaseTerminating && !d.Status.LastTransitionTime.Time.Equal(edgeNow) {
				t.Fatalf("lastTransitionTime %v not stamped at the move to %s", d.Status.LastTransitionTime, d.Status.Phase)
			}
		})
	}
}
