package canary

import (
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/internal/reconcilekit"
)

// TestIdleCanariesAreNotRequeued: a settled tick of a Canary without a run in flight asks for no
// periodic look; a run, a wait, a stall, an error or a short retry keeps its time.
func TestIdleCanariesAreNotRequeued(t *testing.T) {
	interval := ctrl.Result{RequeueAfter: time.Minute}
	canary := func(phase sluicev1.CanaryPhase, mutate ...func(*sluicev1.Canary)) *sluicev1.Canary {
		c := &sluicev1.Canary{Spec: sluicev1.CanarySpec{Analysis: sluicev1.CanaryAnalysis{Interval: "1m"}},
			Status: sluicev1.CanaryStatus{Phase: phase}}
		for _, m := range mutate {
			m(c)
		}
		return c
	}
	stalled := func(c *sluicev1.Canary) {
		reconcilekit.SetCondition(c, sluicev1.ConditionStalled, metav1.ConditionTrue, sluicev1.ReasonTargetNotFound, "gone")
	}
	for _, tc := range []struct {
		name   string
		canary *sluicev1.Canary
		res    ctrl.Result
		err    error
		want   time.Duration
	}{
		{"Initialized", canary(sluicev1.CanaryPhaseInitialized), interval, nil, 0},
		{"Succeeded", canary(sluicev1.CanaryPhaseSucceeded), interval, nil, 0},
		{"Failed", canary(sluicev1.CanaryPhaseFailed), interval, nil, 0},
		{"Succeeded, no requeue asked", canary(sluicev1.CanaryPhaseSucceeded), ctrl.Result{}, nil, 0},
		{"Progressing keeps its step", canary(sluicev1.CanaryPhaseProgressing), interval, nil, time.Minute},
		{"Waiting keeps its window", canary(sluicev1.CanaryPhaseWaiting), ctrl.Result{RequeueAfter: 30 * time.Second}, nil, 30 * time.Second},
		{"Initializing polls", canary(sluicev1.CanaryPhaseInitializing), ctrl.Result{RequeueAfter: 2 * time.Second}, nil, 2 * time.Second},
		{"Promoting polls", canary(sluicev1.CanaryPhasePromoting), ctrl.Result{RequeueAfter: 2 * time.Second}, nil, 2 * time.Second},
		{"stalled while idle retries", canary(sluicev1.CanaryPhaseSucceeded, stalled), interval, nil, time.Minute},
		{"stale cache retry while idle", canary(sluicev1.CanaryPhaseSucceeded), reconcilekit.StaleResult(), nil, reconcilekit.StaleRetry},
		{"error while idle keeps the result", canary(sluicev1.CanaryPhaseInitialized), interval, errors.New("boom"), time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := nextLook(tc.canary, tc.res, tc.err).RequeueAfter; got != tc.want {
				t.Fatalf("requeue after %s, want %s", got, tc.want)
			}
		})
	}
}
