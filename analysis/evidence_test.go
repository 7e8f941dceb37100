package analysis

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// TestCheckOutcomeEvidenceRule: a step advances only on evidence — at least one Pass and no Fail;
// a check where every metric was skipped is no evidence, and an error is neither evidence for nor
// against the canary.
func TestCheckOutcomeEvidenceRule(t *testing.T) {
	r := func(v sluicev1.Verdict) sluicev1.MetricResult {
		return sluicev1.MetricResult{Name: string(v), Verdict: v}
	}
	for _, tc := range []struct {
		name    string
		results []sluicev1.MetricResult
		want    sluicev1.CheckOutcome
	}{
		{"no metrics", nil, sluicev1.CheckNoEvidence},
		{"all skipped", []sluicev1.MetricResult{r(sluicev1.VerdictSkipped), r(sluicev1.VerdictSkipped)}, sluicev1.CheckNoEvidence},
		{"one pass, others skipped", []sluicev1.MetricResult{r(sluicev1.VerdictSkipped), r(sluicev1.VerdictPass)}, sluicev1.CheckPassed},
		{"pass and error", []sluicev1.MetricResult{r(sluicev1.VerdictPass), r(sluicev1.VerdictError)}, sluicev1.CheckError},
		{"error only", []sluicev1.MetricResult{r(sluicev1.VerdictError)}, sluicev1.CheckError},
		{"fail beats error", []sluicev1.MetricResult{r(sluicev1.VerdictError), r(sluicev1.VerdictFail)}, sluicev1.CheckFailed},
		{"no data fails", []sluicev1.MetricResult{r(sluicev1.VerdictPass), r(sluicev1.VerdictNoData)}, sluicev1.CheckFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Check{Results: tc.results}
			if got := c.Outcome(); got != tc.want {
				t.Fatalf("outcome %s, want %s", got, tc.want)
			}
			if c.Failed() != (tc.want == sluicev1.CheckFailed) {
				t.Fatalf("Failed() %v for outcome %s", c.Failed(), tc.want)
			}
			if tc.want != sluicev1.CheckPassed && c.Summary() == "" {
				t.Fatal("a check that did not pass must say why")
			}
		})
	}
}

// TestAllSkippedMetricsAreNoEvidence runs the real engine against Prometheus: a quiet canary
// below minRequestCount and an empty metric with onNoData Skip give a check with no evidence.
func TestAllSkippedMetricsAreNoEvidence(t *testing.T) {
	addr := prom(t).Address()
	e := NewEngine(reader(), Options{Egress: loopbackAllowed})
	quiet := successRate(99)
	quiet.MinRequestCount = new(int64)
	*quiet.MinRequestCount = 100
	empty := duration(500)
	empty.OnNoData = sluicev1.NoDataSkip
	check := analyze(t, e, newCanary("quiet", addr, quiet, empty))
	for _, r := range check.Results {
		if r.Verdict != sluicev1.VerdictSkipped {
			t.Fatalf("%s: %s (%s), want Skipped", r.Name, r.Verdict, r.Message)
		}
	}
	if got := check.Outcome(); got != sluicev1.CheckNoEvidence {
		t.Fatalf("outcome %s, want NoEvidence: a canary that served nothing must not pass", got)
	}
	if !strings.Contains(check.Summary(), "fewer than minRequestCount 100") {
		t.Fatalf("summary does not say why: %s", check.Summary())
	}
}

// TestPrometheusWarningIsAnError: Prometheus answering with warnings (a partial result) gives an
// Error verdict whose message carries the warning, never a Pass. Debian's Prometheus has no way to
// produce warnings on demand, so a local server speaks its HTTP API here.
func TestPrometheusWarningIsAnError(t *testing.T) {
	const warning = "remote store eu-west did not answer; results may be incomplete"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"status": "success",
			"data": map[string]any{"resultType": "vector", "result": []any{
				map[string]any{"metric": map[string]string{}, "value": []any{float64(now.Unix()), "99.9"}},
			}},
			"warnings": []string{warning},
		})
	}))
	defer srv.Close()
	e := NewEngine(reader(), Options{Egress: loopbackAllowed})
	check := analyze(t, e, newCanary("app95", srv.URL, successRate(99)))
	r := check.Results[0]
	if r.Verdict != sluicev1.VerdictError || !strings.Contains(r.Message, warning) || r.Value != "" {
		t.Fatalf("got %s value %q message %q; want Error naming the warning, no value", r.Verdict, r.Value, r.Message)
	}
	if check.Outcome() != sluicev1.CheckError || check.Failed() {
		t.Fatalf("outcome %s failed=%v; want Error, not a failed check", check.Outcome(), check.Failed())
	}
}

// TestUnreachableServerIsAnErrorNotAFailure: metrics unavailable are no evidence against the
// canary: the check's outcome is Error and it is not a failed check.
func TestUnreachableServerIsAnErrorNotAFailure(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := srv.URL
	srv.Close() // nothing listens there any more
	e := NewEngine(reader(), Options{Egress: loopbackAllowed, QueryTimeout: 2 * time.Second})
	check := analyze(t, e, newCanary("app95", addr, successRate(99)))
	if check.Outcome() != sluicev1.CheckError || check.Failed() || !strings.Contains(check.Summary(), addr) {
		t.Fatalf("outcome %s failed=%v summary %q", check.Outcome(), check.Failed(), check.Summary())
	}
}

// TestWindowNeverReachesBeforeTheRun: a check judges only its run's traffic. With the run started
// 40 s before the check, a 1m metric window is clipped to 40s, and the result says which window
// it judged; a run that started less than two scrape intervals ago is not judged yet.
func TestWindowNeverReachesBeforeTheRun(t *testing.T) {
	addr := prom(t).Address()
	e := NewEngine(reader(), Options{Egress: loopbackAllowed})

	c := newCanary("app95", addr, successRate(90))
	c.Status.RunStartTime = &metav1.Time{Time: now.Add(-40 * time.Second)}
	r := analyzeOne(t, e, c)
	if r.Window != "40s" || !strings.Contains(r.Query, "[40s]") || r.WindowStart == nil || !r.WindowStart.Time.Equal(now.Add(-40*time.Second)) {
		t.Fatalf("window %q start %v query %s; want 40s from the run's start", r.Window, r.WindowStart, r.Query)
	}
	if r.Verdict != sluicev1.VerdictPass || !strings.Contains(r.Message, "clipped to the run's start") {
		t.Fatalf("got %s %q; want Pass saying the window was clipped", r.Verdict, r.Message)
	}

	c.Status.RunStartTime = &metav1.Time{Time: now.Add(-10 * time.Second)}
	r = analyzeOne(t, e, c)
	if r.Verdict != sluicev1.VerdictSkipped || r.Query != "" || !strings.Contains(r.Message, "must not reach back before it") {
		t.Fatalf("got %s %q query %q; want Skipped without a query", r.Verdict, r.Message, r.Query)
	}

	c.Status.RunStartTime = &metav1.Time{Time: now.Add(-time.Hour)}
	if r = analyzeOne(t, e, c); r.Window != "1m" || !strings.Contains(r.Query, "[1m]") {
		t.Fatalf("an old run's window %q query %s; want the full 1m", r.Window, r.Query)
	}
	if _, err := e.Analyze(context.Background(), c, now); err != nil {
		t.Fatal(err)
	}
}
