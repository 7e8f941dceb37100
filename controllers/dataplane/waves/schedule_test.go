package waves

import (
	"fmt"
	"testing"

	"k8s.io/utils/ptr"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

func names(prefix string, n int) []string {
	var out []string
	for i := 1; i <= n; i++ {
		out = append(out, fmt.Sprintf("%s-%d", prefix, i))
	}
	return out
}

func TestPlan(t *testing.T) {
	for _, tc := range []struct {
		name       string
		namespaces []string
		canaries   []string
		waves      sluicev1.DataPlaneWaves
		want       string
	}{
		{"six namespaces, canary ns-1, waves of 2", names("ns", 6), []string{"ns-1"},
			sluicev1.DataPlaneWaves{MaxNamespaces: ptr.To[int32](2)}, "[[ns-1] [ns-2 ns-3] [ns-4 ns-5] [ns-6]]"},
		{"default one namespace per wave", []string{"b", "a", "c"}, nil, sluicev1.DataPlaneWaves{}, "[[a] [b] [c]]"},
		{"stable order whatever the input order", []string{"ns-3", "ns-1", "ns-2", "ns-10"}, []string{"ns-2"},
			sluicev1.DataPlaneWaves{MaxNamespaces: ptr.To[int32](2)}, "[[ns-2] [ns-1 ns-10] [ns-3]]"},
		{"two canaries, sorted, one wave", names("ns", 4), []string{"ns-4", "ns-2"},
			sluicev1.DataPlaneWaves{MaxNamespaces: ptr.To[int32](5)}, "[[ns-2 ns-4] [ns-1 ns-3]]"},
		{"percent rounds up", names("ns", 11), []string{"ns-1"},
			sluicev1.DataPlaneWaves{Percent: ptr.To[int32](25)}, "[[ns-1] [ns-10 ns-11 ns-2] [ns-3 ns-4 ns-5] [ns-6 ns-7 ns-8] [ns-9]]"},
		{"percent 100: one fleet wave", names("ns", 4), []string{"ns-1"},
			sluicev1.DataPlaneWaves{Percent: ptr.To[int32](100)}, "[[ns-1] [ns-2 ns-3 ns-4]]"},
		{"tiny percent is still one namespace", names("ns", 3), nil,
			sluicev1.DataPlaneWaves{Percent: ptr.To[int32](1)}, "[[ns-1] [ns-2] [ns-3]]"},
		{"canary not selected is left out (the controller stalls on it)", names("ns", 2), []string{"other"},
			sluicev1.DataPlaneWaves{}, "[[ns-1] [ns-2]]"},
		{"duplicates count once", []string{"a", "a", "b"}, []string{"a", "a"}, sluicev1.DataPlaneWaves{}, "[[a] [b]]"},
		{"only canaries", []string{"a"}, []string{"a"}, sluicev1.DataPlaneWaves{}, "[[a]]"},
		{"nothing", nil, []string{"a"}, sluicev1.DataPlaneWaves{}, "[]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := fmt.Sprint(Plan(tc.namespaces, tc.canaries, tc.waves)); got != tc.want {
				t.Errorf("Plan = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestPlanScale(t *testing.T) {
	waves := Plan(names("ns", 100), []string{"ns-1"}, sluicev1.DataPlaneWaves{Percent: ptr.To[int32](25)})
	var sizes []int
	seen := map[string]bool{}
	for _, w := range waves {
		sizes = append(sizes, len(w))
		for _, ns := range w {
			if seen[ns] {
				t.Fatalf("%s planned twice", ns)
			}
			seen[ns] = true
		}
	}
	if fmt.Sprint(sizes) != "[1 25 25 25 24]" || len(seen) != 100 {
		t.Fatalf("wave sizes %v, %d namespaces", sizes, len(seen))
	}
}
