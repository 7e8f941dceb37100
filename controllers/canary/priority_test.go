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

// TestUnderLoadTheRunsNearestTheirEndGoFirst: every tick asks the priority queue for a priority by
// where its run stands: 0 outside a run (as a watch event), rising with each check while
// Progressing, higher for the promotion, highest once a check failed (a rollback may be due). A
// run's priority never falls until it ends, so among due ticks the runs with the least work left
// are served first.
func TestUnderLoadTheRunsNearestTheirEndGoFirst(t *testing.T) {
	t.Run("a good run", func(t *testing.T) {
		h := newHarness(t)
		h.app(2, "6.0.0")
		h.create(h.canaryFor())
		var lines []string
		for i := 0; i < 10 && h.last.Phase != sluicev1.CanaryPhaseInitialized; i++ {
			res := h.tick()
			lines = append(lines, priorityLine(h.canary().Status, res))
			if res.Priority == nil || *res.Priority != 0 {
				t.Fatalf("initialization asked for priority %v, want 0 (as a watch event)\n%s", res.Priority, strings.Join(lines, "\n"))
			}
		}
		h.setImage("6.0.1")
		last := 0
		for i := 0; i < 40 && h.last.Phase != sluicev1.CanaryPhaseSucceeded; i++ {
			res := h.tick()
			s := h.canary().Status
			lines = append(lines, priorityLine(s, res))
			if res.Priority == nil {
				t.Fatalf("a tick left the priority unset\n%s", strings.Join(lines, "\n"))
			}
			got := *res.Priority
			switch s.Phase {
			case sluicev1.CanaryPhaseProgressing:
				if want := priorityProgressing + int(s.Iterations); got != want {
					t.Fatalf("Progressing after %d checks asked for priority %d, want %d\n%s", s.Iterations, got, want, strings.Join(lines, "\n"))
				}
			case sluicev1.CanaryPhasePromoting, sluicev1.CanaryPhaseFinalising:
				if got != priorityPromotion {
					t.Fatalf("%s asked for priority %d, want %d\n%s", s.Phase, got, priorityPromotion, strings.Join(lines, "\n"))
				}
			case sluicev1.CanaryPhaseSucceeded:
				if got != 0 {
					t.Fatalf("Succeeded asked for priority %d, want 0\n%s", got, strings.Join(lines, "\n"))
				}
				continue
			}
			if got < last {
				t.Fatalf("the run's priority fell from %d to %d\n%s", last, got, strings.Join(lines, "\n"))
			}
			last = got
		}
		if h.last.Phase != sluicev1.CanaryPhaseSucceeded || last != priorityPromotion {
			t.Fatalf("run ended in %s with a last priority of %d, want Succeeded after %d\n%s", h.last.Phase, last, priorityPromotion, strings.Join(lines, "\n"))
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
