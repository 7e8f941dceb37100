package plan

import (
	"fmt"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// Steps returns the canary weights of a run in percent, in order: the explicit stepWeights, or
// stepWeight, 2×stepWeight, … up to maxWeight (default 100) with the last step exactly on
// maxWeight. A spec with neither stepWeight nor stepWeights goes to maxWeight in one step.
// Example: stepWeight 15, maxWeight 61 → [15 30 45 60 61].
func Steps(a sluicev1.CanaryAnalysis) []int32 {
	if len(a.StepWeights) > 0 {
		return append([]int32(nil), a.StepWeights...)
	}
	maxWeight := MaxWeight(a)
	step := a.StepWeight
	if step <= 0 || step > maxWeight {
		step = maxWeight
	}
	var out []int32
	for w := step; w < maxWeight; w += step {
		out = append(out, w)
	}
	return append(out, maxWeight)
}

// MaxWeight is the last canary weight of a run in percent: maxWeight (default 100), or the last
// of stepWeights.
func MaxWeight(a sluicev1.CanaryAnalysis) int32 {
	if len(a.StepWeights) > 0 {
		return a.StepWeights[len(a.StepWeights)-1]
	}
	if a.MaxWeight > 0 {
		return a.MaxWeight
	}
	return 100
}

// NextWeight returns the first step above current, and false when current is at or past the
// last step (the run is ready for promotion).
func NextWeight(steps []int32, current int32) (int32, bool) {
	for _, w := range steps {
		if w > current {
			return w, true
		}
	}
	return 0, false
}

// PromotionWeight returns the canary weight after one promotion step from current: current minus
// stepWeightPromotion, or 0 at once when stepWeightPromotion is unset. Never below 0.
func PromotionWeight(a sluicev1.CanaryAnalysis, current int32) int32 {
	if a.StepWeightPromotion <= 0 || current <= a.StepWeightPromotion {
		return 0
	}
	return current - a.StepWeightPromotion
}

// ValidateStrategy reports a weighted run whose first canary weight would be 100 %: all traffic
// to a revision no check has seen yet, then promotion after one check. That is what an analysis
// with no strategy at all (no stepWeight, stepWeights or iterations) would run, and what
// stepWeight or stepWeights starting at 100 ask for; switching everything at once after checks is
// a blue/green run (iterations). A/B and blue/green runs, and skipAnalysis, are not concerned.
func ValidateStrategy(spec sluicev1.CanarySpec) error {
	if spec.SkipAnalysis || spec.Analysis.Iterations > 0 {
		return nil
	}
	if first := Steps(spec.Analysis)[0]; first >= 100 {
		a := spec.Analysis
		if a.StepWeight == 0 && len(a.StepWeights) == 0 {
			return fmt.Errorf("spec.analysis has no strategy: set stepWeight or stepWeights (a weighted run), or iterations (blue/green; with match, A/B); as it is, the first step would send 100 %% of the traffic to the canary before any check")
		}
		return fmt.Errorf("spec.analysis: the first canary weight would be %d %%, all traffic to a revision no check has seen: start stepWeight/stepWeights below 100, or use iterations for blue/green", first)
	}
	return nil
}
