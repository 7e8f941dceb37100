package canary

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// TestWeightedRunStartingAt100Stalls (findings16b F15): an analysis with no strategy (no
// stepWeight, stepWeights or iterations), or whose first weight is 100, would send all traffic
// to the new revision before any check. The Canary stalls InvalidSpec naming spec.analysis before
// it routes anything, and a release never moves traffic.
func TestWeightedRunStartingAt100Stalls(t *testing.T) {
	for name, tc := range map[string]struct {
		analysis func(*sluicev1.CanaryAnalysis)
		message  string
	}{
		"no strategy":    {func(a *sluicev1.CanaryAnalysis) { a.StepWeight, a.MaxWeight = 0, 0 }, "spec.analysis has no strategy"},
		"stepWeight 100": {func(a *sluicev1.CanaryAnalysis) { a.StepWeight, a.MaxWeight = 100, 0 }, "the first canary weight would be 100 %"},
		"stepWeights":    {func(a *sluicev1.CanaryAnalysis) { a.StepWeight, a.MaxWeight, a.StepWeights = 0, 0, []int32{100} }, "the first canary weight would be 100 %"},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			h.app(2, "1")
			c := h.canaryFor()
			tc.analysis(&c.Spec.Analysis)
			h.create(c)
			for i := 0; i < 4; i++ {
				h.tick()
			}
			h.setImage("2")
			for i := 0; i < 4; i++ {
				h.tick()
				if w := h.routeWeights(); w.Canary > 0 {
					t.Fatalf("route sends %d %% to the canary\n%s", w.Canary, strings.Join(h.log, "\n"))
				}
			}
			cond := findCondition(h.canary(), sluicev1.ConditionStalled)
			if cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != sluicev1.ReasonInvalidSpec || !strings.Contains(cond.Message, tc.message) {
				t.Fatalf("Stalled condition %+v, want InvalidSpec with %q", cond, tc.message)
			}
		})
	}
}
