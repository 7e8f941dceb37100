package canary

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// priorityLine is one tick as the priority test sees it: the phase the tick left, the checks done
// and the priority it asked for its next look.
func priorityLine(s sluicev1.CanaryStatus, res ctrl.Result) string {
	p := "unset"
	if res.Priority != nil {
		p = fmt.Sprint(*res.Priority)
	}
	return fmt.Sprintf("%s iterations=%d failed=%d priority=%s", s.Phase, s.Iterations, s.FailedChecks, p)
}

// TestUnderLoadTheChecksOfLiveCanariesGoFirst: every tick asks the priority queue for a priority by
// where its run stands: 0 outside a run (as a watch event), 1 while an initialization waits for
// its primary, higher while the run starts (no traffic on the canary yet), higher again once the
// canary is live (traffic on it, a check done, the promotion), highest once a check failed (a
// rollback may be due). A run's priority never falls until it ends.
func TestUnderLoadTheChecksOfLiveCanariesGoFirst(t *testing.T) {
	t.Run("a good run", func(t *testing.T) {
		h := newHarness(t)
		h.app(2, "6.0.0")
		h.create(h.canaryFor())
		var lines []string
		for i := 0; i < 10 && h.last.Phase != sluicev1.CanaryPhaseInitialized; i++ {
			res := h.tick()
			s := h.canary().Status
			lines = append(lines, priorityLine(s, res))
			want := priorityOutsideARun // Initialized, or the finalizer's tick before the first: as a watch event
			if s.Phase == sluicev1.CanaryPhaseInitializing {
				want = priorityInitializing
			}
			if res.Priority == nil || *res.Priority != want {
				t.Fatalf("initialization (%s) asked for priority %v, want %d\n%s", s.Phase, res.Priority, want, strings.Join(lines, "\n"))
			}
		}
		h.setImage("6.0.1")
		last, sawStarting := 0, false
		for i := 0; i < 40 && h.last.Phase != sluicev1.CanaryPhaseSucceeded; i++ {
			res := h.tick()
			s := h.canary().Status
			lines = append(lines, priorityLine(s, res))
			if res.Priority == nil {
				t.Fatalf("a tick left the priority unset\n%s", strings.Join(lines, "\n"))
			}
			got := *res.Priority
			want := priorityLiveCanary
			switch {
			case s.Phase == sluicev1.CanaryPhaseSucceeded:
				want = priorityOutsideARun
			case s.Phase == sluicev1.CanaryPhaseProgressing && s.CanaryWeight == 0 && s.Iterations == 0:
				want, sawStarting = priorityRunStarting, true
			}
			if got != want {
				t.Fatalf("%s at weight %d after %d checks asked for priority %d, want %d\n%s", s.Phase, s.CanaryWeight, s.Iterations, got, want, strings.Join(lines, "\n"))
			}
			if s.Phase == sluicev1.CanaryPhaseSucceeded {
				continue
			}
			if got < last {
				t.Fatalf("the run's priority fell from %d to %d\n%s", last, got, strings.Join(lines, "\n"))
			}
			last = got
		}
		if h.last.Phase != sluicev1.CanaryPhaseSucceeded || last != priorityLiveCanary || !sawStarting {
			t.Fatalf("run ended in %s with a last priority of %d (a starting tick seen: %t), want Succeeded after %d and a start at %d\n%s",
				h.last.Phase, last, sawStarting, priorityLiveCanary, priorityRunStarting, strings.Join(lines, "\n"))
		}
	})
	t.Run("a failing run", func(t *testing.T) {
		h := newHarness(t)
		h.app(2, "6.0.0")
		h.create(h.canaryFor())
		h.runUntil(sluicev1.CanaryPhaseInitialized, 10)
		h.analyzer.fail = func(w int32) bool { return w >= 20 }
		h.setImage("6.0.1")
		var lines []string
		sawFailing := false
		for i := 0; i < 40 && h.last.Phase != sluicev1.CanaryPhaseFailed; i++ {
			res := h.tick()
			s := h.canary().Status
			lines = append(lines, priorityLine(s, res))
			if s.Phase == sluicev1.CanaryPhaseProgressing && s.FailedChecks > 0 {
				sawFailing = true
				if res.Priority == nil || *res.Priority != priorityFailing {
					t.Fatalf("a run with a failed check asked for priority %v, want %d\n%s", res.Priority, priorityFailing, strings.Join(lines, "\n"))
				}
			}
		}
		if h.last.Phase != sluicev1.CanaryPhaseFailed || !sawFailing {
			t.Fatalf("run ended in %s (a failed check seen: %t), want Failed after a failed check\n%s", h.last.Phase, sawFailing, strings.Join(lines, "\n"))
		}
	})
}

// TestAPrimaryReadyWakesItsInitializationBeforeNewCanaries, in the manager's queue
// (controller-runtime's priority queue): 29 Canaries created at once wait for their first tick
// (their create events, priority 0) when the primary of a Canary whose first tick came before
// theirs becomes ready. Its tick (the Deployment watch's event, priority 0, on the Canary already
// queued for its next look) comes first, so a Canary is Initialized as soon as its primary is
// ready rather than after the first tick of every Canary created after it.
func TestAPrimaryReadyWakesItsInitializationBeforeNewCanaries(t *testing.T) {
	q := priorityqueue.New[reconcile.Request]("initialization-order")
	defer q.ShutDown()
	canary := func(i int) reconcile.Request {
		return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "fleet", Name: fmt.Sprintf("app-%02d", i)}}
	}
	for i := 1; i < 30; i++ {
		q.AddWithOpts(priorityqueue.AddOpts{}, canary(i)) // created while app-00's first tick ran
	}
	// app-00's first tick created its primary and left it Initializing: its next look (the
	// progress deadline) is far away, at the priority the tick asked for.
	initializing := &sluicev1.Canary{Status: sluicev1.CanaryStatus{Phase: sluicev1.CanaryPhaseInitializing}}
	q.AddWithOpts(priorityqueue.AddOpts{After: time.Hour, Priority: new(nextLookPriority(initializing))}, canary(0))
	q.Add(canary(0)) // its primary is ready: the Deployment watch wakes it
	got, priority, _ := q.GetWithPriority()
	if got != canary(0) {
		t.Fatalf("the next tick is %s (priority %d), want app-00, whose primary is ready, before the first tick of 29 new Canaries",
			got.Name, priority)
	}
}
