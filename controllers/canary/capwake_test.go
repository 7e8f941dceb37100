package canary

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/scheme"
)

// TestCapStartsTheWaitingRunWhenARunEnds: with --max-progressing=1 a second new revision waits
// (phase Waiting, reason RolloutCapReached, a message without a count of the runs, which would
// change between its looks and rewrite its status), and the moment the run in flight ends it
// starts — not at its next look, an interval (10 minutes here) later.
func TestCapStartsTheWaitingRunWhenARunEnds(t *testing.T) {
	first, second := newHarness(t), newHarness(t)
	for _, h := range []*harness{first, second} {
		h.app(1, "1")
		playDeploymentController(t, h.ns)
	}
	startManagerConfigured(t, managerConfig{analyzer: &scriptedAnalyzer{}, metricsAddr: "0", notifyTimeout: 2 * time.Second,
		namespaces: []string{first.ns, second.ns}, options: Options{MaxProgressing: 1}})
	quick := fastCanary(first.ns)
	first.create(quick)
	patient := fastCanary(second.ns)
	patient.Spec.Analysis.Interval = "10m"
	second.create(patient)
	for _, h := range []*harness{first, second} {
		waitFor(t, h.ns, "podinfo", 30*time.Second, "Initialized", func(c *sluicev1.Canary) bool {
			return c.Status.Phase == sluicev1.CanaryPhaseInitialized
		})
	}

	first.setImage("2")
	waitFor(t, first.ns, "podinfo", 30*time.Second, "the first run in flight", func(c *sluicev1.Canary) bool {
		return runningPhases[c.Status.Phase]
	})
	second.setImage("2")
	waiting := waitFor(t, second.ns, "podinfo", 30*time.Second, "the second run waiting for the cap", func(c *sluicev1.Canary) bool {
		return c.Status.Phase == sluicev1.CanaryPhaseWaiting
	})
	ready := meta.FindStatusCondition(waiting.Status.Conditions, sluicev1.ConditionReady)
	want := "the cap of 1 runs at once is reached (--max-progressing); the run starts when a slot frees"
	if ready == nil || ready.Reason != sluicev1.ReasonRolloutCapReached || ready.Message != want {
		t.Fatalf("waiting Canary's Ready condition %+v, want reason %s and message %q", ready, sluicev1.ReasonRolloutCapReached, want)
	}

	ended := waitFor(t, first.ns, "podinfo", 60*time.Second, "the first run to end", func(c *sluicev1.Canary) bool {
		return c.Status.Phase == sluicev1.CanaryPhaseSucceeded
	})
	started := waitFor(t, second.ns, "podinfo", 15*time.Second, "the waiting run to start once the first ended", func(c *sluicev1.Canary) bool {
		return runningPhases[c.Status.Phase]
	})
	if after := started.Status.LastTransitionTime.Sub(ended.Status.LastTransitionTime.Time); after > 10*time.Second {
		t.Fatalf("the waiting run started %s after the first ended, want at once", after)
	}
	if started.Status.LastAppliedSpec == waiting.Status.LastAppliedSpec {
		t.Fatalf("the started run kept lastAppliedSpec %q of the run before", started.Status.LastAppliedSpec)
	}
}

// TestCompareWaitsOrdersByWaitThenName: the slot a run frees goes to the earliest Waiting, then
// by namespace and name (a Canary without a transition time last).
func TestCompareWaitsOrdersByWaitThenName(t *testing.T) {
	at := func(ns, name string, minute int) *sluicev1.Canary {
		c := &sluicev1.Canary{}
		c.Namespace, c.Name = ns, name
		if minute >= 0 {
			ts := metav1.NewTime(time.Date(2026, 12, 2, 6, minute, 0, 0, time.UTC))
			c.Status.LastTransitionTime = &ts
		}
		return c
	}
	cases := []struct {
		name string
		a, b *sluicev1.Canary
		want bool
	}{
		{"earlier wait first", at("b", "b", 1), at("a", "a", 2), true},
		{"later wait after", at("a", "a", 2), at("b", "b", 1), false},
		{"same time: namespace", at("a", "z", 1), at("b", "a", 1), true},
		{"same time and namespace: name", at("a", "a", 1), at("a", "b", 1), true},
		{"no time last", at("a", "a", -1), at("b", "b", 5), false},
		{"a time before none", at("b", "b", 5), at("a", "a", -1), true},
	}
	for _, tc := range cases {
		if got := compareWaits(tc.a, tc.b) < 0; got != tc.want {
			t.Errorf("%s: a before b = %t, want %t", tc.name, got, tc.want)
		}
		if back := compareWaits(tc.b, tc.a) < 0; back == tc.want {
			t.Errorf("%s: the order is not antisymmetric (b before a = %t too)", tc.name, back)
		}
	}
}

// TestCapAdmitsNoMoreThanTheCapAtOnce: workers that look at once never take more slots than
// the cap leaves beside the runs the cache shows in flight (counting and admitting are one step,
// and the runs admitted but not yet in the cache count).
func TestCapAdmitsNoMoreThanTheCapAtOnce(t *testing.T) {
	inFlight := &sluicev1.Canary{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "in-flight"},
		Status: sluicev1.CanaryStatus{Phase: sluicev1.CanaryPhaseProgressing}}
	objs := []client.Object{inFlight}
	waiting := make([]*sluicev1.Canary, 20)
	for i := range waiting {
		waiting[i] = &sluicev1.Canary{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: fmt.Sprintf("waiting-%02d", i)},
			Status: sluicev1.CanaryStatus{Phase: sluicev1.CanaryPhaseInitialized, LastAppliedSpec: "rev-1", LastPromotedSpec: "rev-1"}}
		objs = append(objs, waiting[i])
	}
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(objs...).
		WithIndex(&sluicev1.Canary{}, indexRunning, indexRunningValue).Build()
	r := &Reconciler{Client: c, Options: Options{MaxProgressing: 4}}
	now := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	var admitted atomic.Int32
	var wg sync.WaitGroup
	for _, cn := range waiting {
		wg.Go(func() {
			ok, err := r.cap.admit(context.Background(), r, cn, "rev-2", now)
			if err != nil {
				t.Errorf("admit %s: %v", cn.Name, err)
			}
			if ok {
				admitted.Add(1)
			}
		})
	}
	wg.Wait()
	if got := admitted.Load(); got != 3 {
		t.Fatalf("20 runs looking at once beside 1 in flight under a cap of 4: %d admitted, want 3", got)
	}
}
