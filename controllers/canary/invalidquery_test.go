package canary

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"sluice.dev/sluice/analysis"
	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/test/promtest"
)

// TestInvalidQueryStallsBeforeTrafficAndEndsTheRunNamingIt runs the real analysis engine against
// a real Prometheus: a new revision whose metric's MetricTemplate can never be judged (a query
// Prometheus's parser rejects) stalls at weight 0, naming the template and the parser's message;
// once fixed the run starts; when the template turns invalid mid-run (a range vector) the run
// holds, runs no check, and rolls back at the progress deadline naming the configuration error,
// never reporting "metrics unavailable".
func TestInvalidQueryStallsBeforeTrafficAndEndsTheRunNamingIt(t *testing.T) {
	h := newHarness(t)
	prom := promtest.StartT(t, promtest.Config{})
	h.r.Analyzer = analysis.NewEngine(env.Client, analysis.Options{DefaultAddress: prom.Address(), Egress: loopbackAllowed})
	h.app(1, "1")
	tpl := &sluicev1.MetricTemplate{ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: h.ns},
		Spec: sluicev1.MetricTemplateSpec{Query: `vector(100)`}}
	if err := h.c.Create(h.ctx, tpl); err != nil {
		t.Fatal(err)
	}
	setQuery := func(q string) {
		t.Helper()
		cur := &sluicev1.MetricTemplate{}
		if err := h.c.Get(h.ctx, client.ObjectKeyFromObject(tpl), cur); err != nil {
			t.Fatal(err)
		}
		patch := client.MergeFrom(cur.DeepCopy())
		cur.Spec.Query = q
		if err := h.c.Patch(h.ctx, cur, patch); err != nil {
			t.Fatal(err)
		}
	}
	c := seedCanary(h.ns)
	c.Spec.ProgressDeadlineSeconds = ptr.To(int32(300))
	c.Spec.Analysis.Metrics = []sluicev1.CanaryMetric{{Name: "q", Interval: "1m",
		TemplateRef: &sluicev1.CrossNamespaceObjectReference{Name: "q"}, ThresholdRange: &sluicev1.ThresholdRange{Min: ptr.To(50.0)}}}
	h.create(c)
	h.runUntil(sluicev1.CanaryPhaseInitialized, 10)

	// Before the run: the template is broken, a new revision arrives.
	setQuery(`sum(rate(foo{a="{{ .namespace }}"}[{{ .interval }}])`)
	h.setImage("2")
	for i := 0; i < 5; i++ {
		h.tick()
	}
	got := h.canary()
	if got.Status.CanaryWeight != 0 || h.routeWeights().Canary != 0 || got.Status.Phase == sluicev1.CanaryPhaseProgressing && got.Status.CanaryWeight > 0 {
		t.Fatalf("traffic moved to the canary with an invalid query: phase %s weight %d route %+v\n%s",
			got.Status.Phase, got.Status.CanaryWeight, h.routeWeights(), strings.Join(h.log, "\n"))
	}
	st := findCondition(got, sluicev1.ConditionStalled)
	if st == nil || st.Reason != sluicev1.ReasonInvalidQuery || !strings.Contains(st.Message, "MetricTemplate "+h.ns+"/q") ||
		!strings.Contains(st.Message, "unclosed left parenthesis") {
		t.Fatalf("Stalled %+v; want InvalidQuery naming MetricTemplate q and the parser's message", st)
	}
	if !strings.Contains(strings.Join(h.log, "\n"), "["+sluicev1.ReasonInvalidQuery+"]") {
		t.Fatalf("no InvalidQuery event:\n%s", strings.Join(h.log, "\n"))
	}

	// Fixed: the run starts and puts traffic on the canary.
	setQuery(`vector(100)`)
	for i := 0; i < 10 && h.canary().Status.CanaryWeight == 0; i++ {
		h.tick()
	}
	if w := h.canary().Status.CanaryWeight; w == 0 {
		t.Fatalf("the run did not start once the query was fixed:\n%s", strings.Join(h.log, "\n"))
	}
	if st := findCondition(h.canary(), sluicev1.ConditionStalled); st != nil {
		t.Fatalf("Stalled kept after the fix: %+v", st)
	}

	// Mid-run the template turns into a range vector: a configuration error, ended at the deadline.
	setQuery(`foo{a="{{ .namespace }}"}[5m]`)
	checksBefore := h.canary().Status.Iterations
	broke := h.clock.Now()
	for h.clock.Now().Sub(broke) < 7*time.Minute && h.last.Phase != sluicev1.CanaryPhaseFailed {
		h.tick()
	}
	log := strings.Join(h.log, "\n")
	got = h.canary()
	if got.Status.Phase != sluicev1.CanaryPhaseFailed {
		t.Fatalf("phase %s at %s, want Failed at the progress deadline; status %+v\n%s", got.Status.Phase, h.clock.Now().Sub(h.start), got.Status, log)
	}
	if took := h.clock.Now().Sub(broke); took > 6*time.Minute+10*time.Second {
		t.Fatalf("rolled back %s after the template broke, want within the 5m deadline (+ one interval)", took)
	}
	promoted := findCondition(got, sluicev1.ConditionPromoted)
	if promoted == nil || !strings.Contains(promoted.Message, "progress deadline exceeded while stalled (InvalidQuery") ||
		!strings.Contains(promoted.Message, "range vector") {
		t.Fatalf("rollback reason %+v; want the deadline naming the InvalidQuery stall\n%s", promoted, log)
	}
	if strings.Contains(log, "[MetricsUnavailable]") || strings.Contains(promoted.Message, "metrics unavailable") {
		t.Fatalf("a configuration error reported as metrics unavailable:\n%s", log)
	}
	if got.Status.Iterations != checksBefore {
		t.Fatalf("%d checks ran on a query that can never be judged", got.Status.Iterations-checksBefore)
	}
	if w := h.routeWeights(); w.Canary != 0 {
		t.Fatalf("route %+v after the rollback", w)
	}
}
