package canary

import (
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	"sluice.dev/sluice/analysis"
	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/test/promtest"
)

// TestIdleCanaryNoData runs the real analysis engine against a real Prometheus that has no samples
// for the canary (an idle service): with onNoData Skip below a minimum request count the run is
// promoted; with the default it is rolled back after threshold checks, each one a NoData verdict.
func TestIdleCanaryNoData(t *testing.T) {
	testenv := env
	if testenv == nil {
		t.Skip("needs envtest")
	}
	prom := promtest.StartT(t, promtest.Config{})
	for _, tt := range []struct {
		name      string
		skipIdle  bool
		wantPhase sluicev1.CanaryPhase
		verdict   sluicev1.Verdict
	}{
		{"skip below minimum request count promotes", true, sluicev1.CanaryPhaseSucceeded, sluicev1.VerdictSkipped},
		{"default fails on no data and rolls back", false, sluicev1.CanaryPhaseFailed, sluicev1.VerdictNoData},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.r.Analyzer = analysis.NewEngine(env.Client, analysis.Options{DefaultAddress: prom.Address()})
			h.app(1, "1")
			c := seedCanary(h.ns)
			if tt.skipIdle {
				for i := range c.Spec.Analysis.Metrics {
					c.Spec.Analysis.Metrics[i].OnNoData = sluicev1.NoDataSkip
					c.Spec.Analysis.Metrics[i].MinRequestCount = ptr.To[int64](10)
				}
			}
			h.create(c)
			h.runUntil(sluicev1.CanaryPhaseInitialized, 10)
			h.setImage("2")
			h.runUntil(tt.wantPhase, 60)
			got := h.canary()
			for _, m := range got.Status.Analysis {
				if m.Verdict != tt.verdict {
					t.Fatalf("metric %s verdict %s (%s), want %s", m.Name, m.Verdict, m.Message, tt.verdict)
				}
			}
			if tt.wantPhase == sluicev1.CanaryPhaseFailed {
				if got.Status.FailedChecks != 5 || !strings.Contains(strings.Join(h.log, "\n"), "NoData") {
					t.Fatalf("rolled back after %d checks; log:\n%s", got.Status.FailedChecks, strings.Join(h.log, "\n"))
				}
			}
		})
	}
}

// TestMissingMetricTemplateStalls: a templateRef to a MetricTemplate that does not exist is a spec
// problem (Stalled, InvalidSpec, naming the template), not an unreachable metrics server.
func TestMissingMetricTemplateStalls(t *testing.T) {
	h := newHarness(t)
	prom := promtest.StartT(t, promtest.Config{})
	h.r.Analyzer = analysis.NewEngine(env.Client, analysis.Options{DefaultAddress: prom.Address()})
	h.app(1, "1")
	c := seedCanary(h.ns)
	c.Spec.Analysis.Metrics = append(c.Spec.Analysis.Metrics, sluicev1.CanaryMetric{Name: "errors",
		TemplateRef: &sluicev1.CrossNamespaceObjectReference{Name: "nope"}, ThresholdRange: &sluicev1.ThresholdRange{Max: ptr.To(1.0)}})
	h.create(c)
	h.tick()
	h.tick()
	cond := findCondition(h.canary(), sluicev1.ConditionStalled)
	if cond == nil || cond.Reason != sluicev1.ReasonInvalidSpec || !strings.Contains(cond.Message, "nope") {
		t.Fatalf("stalled condition %+v, want InvalidSpec naming MetricTemplate nope", cond)
	}
}
