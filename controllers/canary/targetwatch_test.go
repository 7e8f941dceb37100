package canary

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// TestTargetStatusWakesOnlyCanariesThatReadIt: a change of a target's status alone wakes the
// Canaries with a run in flight (or starting, waiting, holding traffic, stalled), never an idle
// one; any change of the spec or metadata wakes every Canary of the target.
func TestTargetStatusWakesOnlyCanariesThatReadIt(t *testing.T) {
	old := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "app", Generation: 3, Labels: map[string]string{"a": "1"}}}
	changed := func(f func(d *appsv1.Deployment)) *appsv1.Deployment {
		d := old.DeepCopy()
		f(d)
		return d
	}
	for _, tc := range []struct {
		name       string
		cur        *appsv1.Deployment
		statusOnly bool
	}{
		{"ready replicas", changed(func(d *appsv1.Deployment) { d.Status.ReadyReplicas = 1 }), true},
		{"spec (a new generation)", changed(func(d *appsv1.Deployment) { d.Generation = 4 }), false},
		{"a label", changed(func(d *appsv1.Deployment) { d.Labels["a"] = "2" }), false},
		{"an annotation", changed(func(d *appsv1.Deployment) { d.Annotations = map[string]string{"x": "y"} }), false},
		{"deletion", changed(func(d *appsv1.Deployment) { now := metav1.Now(); d.DeletionTimestamp = &now }), false},
	} {
		if got := statusOnlyChange(old, tc.cur); got != tc.statusOnly {
			t.Errorf("%s: status only %v, want %v", tc.name, got, tc.statusOnly)
		}
	}
	stalled := []metav1.Condition{{Type: sluicev1.ConditionStalled, Status: metav1.ConditionTrue}}
	for _, tc := range []struct {
		name  string
		st    sluicev1.CanaryStatus
		reads bool
	}{
		{"new", sluicev1.CanaryStatus{}, true},
		{"initializing", sluicev1.CanaryStatus{Phase: sluicev1.CanaryPhaseInitializing}, true},
		{"waiting", sluicev1.CanaryStatus{Phase: sluicev1.CanaryPhaseWaiting}, true},
		{"progressing", sluicev1.CanaryStatus{Phase: sluicev1.CanaryPhaseProgressing}, true},
		{"promoting", sluicev1.CanaryStatus{Phase: sluicev1.CanaryPhasePromoting, CanaryWeight: 50}, true},
		{"failed, the canary still holding traffic", sluicev1.CanaryStatus{Phase: sluicev1.CanaryPhaseFailed, CanaryWeight: 20}, true},
		{"initialized, stalled", sluicev1.CanaryStatus{Phase: sluicev1.CanaryPhaseInitialized, Conditions: stalled}, true},
		{"initialized", sluicev1.CanaryStatus{Phase: sluicev1.CanaryPhaseInitialized}, false},
		{"succeeded", sluicev1.CanaryStatus{Phase: sluicev1.CanaryPhaseSucceeded}, false},
		{"failed", sluicev1.CanaryStatus{Phase: sluicev1.CanaryPhaseFailed}, false},
	} {
		if got := readsTargetStatus(&sluicev1.Canary{Status: tc.st}); got != tc.reads {
			t.Errorf("%s: reads the target's status %v, want %v", tc.name, got, tc.reads)
		}
	}
}
