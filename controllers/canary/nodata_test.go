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
// for the canary (an idle service): with onNoData Skip below a minimum request count the checks are
// no evidence, so the step holds and the run rolls back at the progress deadline — unless the
// Canary opts in to advancing without data, then it is promoted and says so; with the default it
// is rolled back after threshold checks, each one a NoData verdict.
func TestIdleCanaryNoData(t *testing.T) {
	testenv := env
	if testenv == nil {
		t.Skip("needs envtest")
	}
	prom := promtest.StartT(t, promtest.Config{})
	for _, tt := range []struct {
		name        string
		skipIdle    bool
		withoutData bool
		wantPhase   sluicev1.CanaryPhase
		verdict     sluicev1.Verdict
	}{
		{"skip below minimum request count holds, then rolls back at the deadline", true, false, sluicev1.CanaryPhaseFailed, sluicev1.VerdictSkipped},
		{"skip below minimum request count with advanceWithoutData promotes", true, true, sluicev1.CanaryPhaseSucceeded, sluicev1.VerdictSkipped},
		{"default fails on no data and rolls back", false, false, sluicev1.CanaryPhaseFailed, sluicev1.VerdictNoData},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.r.Analyzer = analysis.NewEngine(env.Client, analysis.Options{DefaultAddress: prom.Address(), Egress: loopbackAllowed})
			h.app(1, "1")
			c := seedCanary(h.ns)
			if tt.skipIdle {
				for i := range c.Spec.Analysis.Metrics {
					c.Spec.Analysis.Metrics[i].OnNoData = sluicev1.NoDataSkip
					c.Spec.Analysis.Metrics[i].MinRequestCount = ptr.To[int64](10)
				}
			}
			c.Spec.Analysis.AdvanceWithoutData = tt.withoutData
			h.create(c)
			h.runUntil(sluicev1.CanaryPhaseInitialized, 10)
			h.setImage("2")
			h.runUntil(tt.wantPhase, 60)
			log := strings.Join(h.log, "\n")
			switch {
			case tt.skipIdle && !tt.withoutData:
				if h.deployment("podinfo").Spec.Template.Spec.Containers[0].Image == h.deployment("podinfo-primary").Spec.Template.Spec.Containers[0].Image ||
					!strings.Contains(log, "[NoEvidence]") || !strings.Contains(log, "progress deadline exceeded") {
					t.Fatalf("a canary that served nothing was promoted, or the hold was not said:\n%s", log)
				}
			case tt.withoutData:
				if got := h.canary().Status.LastCheck; got == nil || !got.AdvancedWithoutData || !strings.Contains(log, "[AdvancedWithoutData]") {
					t.Fatalf("advancing without data not said: %+v\n%s", got, log)
				}
			}
			got := h.canary()
			for _, m := range got.Status.Analysis {
				if m.Verdict != tt.verdict {
					t.Fatalf("metric %s verdict %s (%s), want %s", m.Name, m.Verdict, m.Message, tt.verdict)
				}
			}
			if tt.wantPhase == sluicev1.CanaryPhaseFailed && !tt.skipIdle {
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
	h.r.Analyzer = analysis.NewEngine(env.Client, analysis.Options{DefaultAddress: prom.Address(), Egress: loopbackAllowed})
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
