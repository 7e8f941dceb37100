package plan

import (
	"fmt"
	"strings"
	"testing"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// scenario runs one golden run (a rollout or a rollback) in a fresh world, losing the writes lose
// chooses, and returns the world at the end.
func scenario(t *testing.T, failFrom int32, lose func(w *world, d Decision, write string) bool) *world {
	t.Helper()
	w := newWorld(seedSpec())
	w.analysis = failingFrom(failFrom)
	w.initialized(t)
	w.targetRevision = "rev-2"
	w.lose = lose
	want := sluicev1.CanaryPhaseSucceeded
	if failFrom <= 50 {
		want = sluicev1.CanaryPhaseFailed
	}
	w.runUntil(t, 80, want)
	w.lose = nil
	for i := 0; i < 5; i++ { // settle: level-triggered repairs of lost actions
		w.tick(t)
	}
	return w
}

// end is the part of the final state every run must agree on.
func end(w *world) string {
	s := w.status
	return fmt.Sprintf("phase=%s weight=%d failed=%d iterations=%d applied=%s promoted=%s route=%d canaryReplicas=%d primary=%s",
		s.Phase, s.CanaryWeight, s.FailedChecks, s.Iterations, s.LastAppliedSpec, s.LastPromotedSpec, w.routeWeight, w.canaryReplicas, w.primaryRevision)
}

// TestLostWritesConverge loses, one at a time, every write (the status, each action) of every
// tick of a golden rollout and a golden rollback: the final state equals the fault-free one, the
// route's weight never goes backwards then forwards, and no check is counted twice (the number of
// analyses run equals the fault-free number, plus at most the one whose status was lost).
func TestLostWritesConverge(t *testing.T) {
	for _, tc := range []struct {
		name     string
		failFrom int32
	}{{"rollout", 1000}, {"rollback", 20}} {
		t.Run(tc.name, func(t *testing.T) {
			clean := scenario(t, tc.failFrom, nil)
			want := end(clean)
			ticks := len(clean.log) + 40
			cases := 0
			for n := 0; n < ticks; n++ {
				for _, write := range []string{"status", string(ActionSetWeights), string(ActionScaleCanaryUp), string(ActionScaleCanaryDown), string(ActionPromotePrimary)} {
					tick := 0
					hit := false
					lose := func(w *world, d Decision, what string) bool {
						if what == "status" {
							tick++
						}
						if tick-1 == n && what == write && !hit && (what == "status" || d.Has(Action(what))) {
							hit = true
							return true
						}
						return false
					}
					w := scenario(t, tc.failFrom, lose)
					if !hit {
						continue
					}
					cases++
					if got := end(w); got != want {
						t.Fatalf("losing %s of tick %d: final state\n got %s\nwant %s\n%s", write, n, got, want, strings.Join(w.log, "\n"))
					}
					noBackAndForth(t, w)
					if w.checks > clean.checks+1 {
						t.Fatalf("losing %s of tick %d: %d analyses, fault-free %d\n%s", write, n, w.checks, clean.checks, strings.Join(w.log, "\n"))
					}
				}
			}
			t.Logf("%d lost writes, each converged to %s", cases, want)
		})
	}
}
