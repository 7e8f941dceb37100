package plan

import (
	"slices"
	"testing"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

func TestSteps(t *testing.T) {
	tests := []struct {
		name     string
		analysis sluicev1.CanaryAnalysis
		want     []int32
	}{
		{"seed 10/50", sluicev1.CanaryAnalysis{StepWeight: 10, MaxWeight: 50}, []int32{10, 20, 30, 40, 50}},
		{"15/61 lands on max", sluicev1.CanaryAnalysis{StepWeight: 15, MaxWeight: 61}, []int32{15, 30, 45, 60, 61}},
		{"7/50", sluicev1.CanaryAnalysis{StepWeight: 7, MaxWeight: 50}, []int32{7, 14, 21, 28, 35, 42, 49, 50}},
		{"30/100", sluicev1.CanaryAnalysis{StepWeight: 30, MaxWeight: 100}, []int32{30, 60, 90, 100}},
		{"step equals max", sluicev1.CanaryAnalysis{StepWeight: 50, MaxWeight: 50}, []int32{50}},
		{"default max 100", sluicev1.CanaryAnalysis{StepWeight: 25}, []int32{25, 50, 75, 100}},
		{"explicit list", sluicev1.CanaryAnalysis{StepWeights: []int32{1, 2, 10, 80}}, []int32{1, 2, 10, 80}},
		{"nothing set: one step to 100", sluicev1.CanaryAnalysis{}, []int32{100}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Steps(tt.analysis); !slices.Equal(got, tt.want) {
				t.Fatalf("Steps = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestNextWeight(t *testing.T) {
	steps := []int32{1, 2, 10, 80}
	for _, tt := range []struct {
		current int32
		want    int32
		ok      bool
	}{{0, 1, true}, {1, 2, true}, {2, 10, true}, {10, 80, true}, {80, 0, false}, {5, 10, true}} {
		got, ok := NextWeight(steps, tt.current)
		if got != tt.want || ok != tt.ok {
			t.Errorf("NextWeight(%d) = %d, %v; want %d, %v", tt.current, got, ok, tt.want, tt.ok)
		}
	}
}

func TestPromotionWeight(t *testing.T) {
	a := sluicev1.CanaryAnalysis{StepWeightPromotion: 20}
	for current, want := range map[int32]int32{50: 30, 30: 10, 10: 0, 20: 0, 0: 0} {
		if got := PromotionWeight(a, current); got != want {
			t.Errorf("PromotionWeight(%d) = %d, want %d", current, got, want)
		}
	}
	if got := PromotionWeight(sluicev1.CanaryAnalysis{}, 50); got != 0 {
		t.Errorf("without stepWeightPromotion: got %d, want 0 at once", got)
	}
}

func TestWorkloadIsReady(t *testing.T) {
	for _, tt := range []struct {
		name      string
		w         Workload
		threshold int32
		want      bool
	}{
		{"all ready", Workload{Exists: true, RolledOut: true, Desired: 3, Ready: 3}, 100, true},
		{"two of three at 100", Workload{Exists: true, RolledOut: true, Desired: 3, Ready: 2}, 100, false},
		{"two of three at 50", Workload{Exists: true, RolledOut: true, Desired: 3, Ready: 2}, 50, true},
		{"zero ready never ready even at threshold 0", Workload{Exists: true, RolledOut: true, Desired: 3}, 0, false},
		{"not rolled out", Workload{Exists: true, Desired: 1, Ready: 1}, 100, false},
		{"missing", Workload{}, 0, false},
	} {
		if got := tt.w.IsReady(tt.threshold); got != tt.want {
			t.Errorf("%s: IsReady = %v, want %v", tt.name, got, tt.want)
		}
	}
}
