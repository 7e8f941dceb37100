package canary

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/canary/plan"
)

type reasonLog []string

func (l *reasonLog) Eventf(_, _ runtime.Object, eventtype, reason, _, _ string, _ ...any) {
	*l = append(*l, eventtype+" "+reason)
}

// TestStepEventsArePostedOnlyWhenAskedFor: by default the weight steps and the start of the
// promotion stay out of the Kubernetes events (every other transition, warnings included, is
// posted); Options.StepEvents posts them.
func TestStepEventsArePostedOnlyWhenAskedFor(t *testing.T) {
	emit := func(r *Reconciler) []string {
		for _, e := range [][2]string{{"Normal", plan.EventNewRevision}, {"Normal", plan.EventAdvanced},
			{"Warning", plan.EventCheckFailed}, {"Warning", plan.EventAdvanced}, {"Normal", plan.EventPromoting},
			{"Normal", plan.EventSucceeded}} {
			r.eventRecorder().Eventf(&sluicev1.Canary{}, nil, e[0], e[1], "Reconcile", "x")
		}
		return *r.Recorder.(*reasonLog)
	}
	got := emit(&Reconciler{Recorder: &reasonLog{}})
	want := []string{"Normal NewRevision", "Warning CheckFailed", "Warning WeightAdvanced", "Normal Succeeded"}
	if len(got) != len(want) {
		t.Fatalf("default: posted %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("default: posted %v, want %v", got, want)
		}
	}
	if got := emit(&Reconciler{Recorder: &reasonLog{}, Options: Options{StepEvents: true}}); len(got) != 6 {
		t.Fatalf("StepEvents: posted %v, want all 6", got)
	}
}
