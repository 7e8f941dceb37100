package canary

import (
	"fmt"
	"strings"
	"testing"

	ctrl "sigs.k8s.io/controller-runtime"

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
// where its run stands: 0 outside a run (as a watch event), higher while the run starts (no
// traffic on the canary yet), higher again once the canary is live (traffic on it, a check done,
// the promotion), highest once a check failed (a rollback may be due). A run's priority never
// falls until it ends.
func TestUnderLoadTheChecksOfLiveCanariesGoFirst(t *testing.T) {
	t.Run("a good run", func(t *testing.T) {
		h := newHarness(t)
		h.app(2, "6.0.0")
		h.create(h.canaryFor())
		var lines []string
		for i := 0; i < 10 && h.last.Phase != sluicev1.CanaryPhaseInitialized; i++ {
			res := h.tick()
			lines = append(lines, priorityLine(h.canary().Status, res))
			if res.Priority == nil || *res.Priority != priorityOutsideARun {
				t.Fatalf("initialization asked for priority %v, want %d (as a watch event)\n%s", res.Priority, priorityOutsideARun, strings.Join(lines, "\n"))
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
