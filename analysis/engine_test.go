package analysis

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/egress"
	"sluice.dev/sluice/test/promtest"
)

func TestSuccessRateThreshold(t *testing.T) {
	addr := prom(t).Address()
	e := NewEngine(reader(), Options{Egress: loopbackAllowed})
	for _, tc := range []struct {
		min  float64
		want sluicev1.Verdict
	}{
		{90, sluicev1.VerdictPass},
		{95, sluicev1.VerdictPass}, // inclusive
		{99, sluicev1.VerdictFail},
	} {
		r := analyzeOne(t, e, newCanary("app95", addr, successRate(tc.min)))
		if r.Verdict != tc.want || r.Value != "95.00" {
			t.Errorf("min %v: verdict %s value %q, want %s 95.00", tc.min, r.Verdict, r.Value, tc.want)
		}
		if wantRange := "[" + strconv.FormatFloat(tc.min, 'f', -1, 64) + ", +Inf]"; r.ThresholdRange != wantRange {
			t.Errorf("range %q, want %q", r.ThresholdRange, wantRange)
		}
		if r.CheckedAt == nil || !r.CheckedAt.Time.Equal(now) {
			t.Errorf("CheckedAt %v, want %v", r.CheckedAt, now)
		}
		if !strings.Contains(r.Query, `destination_workload="app95"`) || !strings.Contains(r.Query, `reporter="destination"`) {
			t.Errorf("query %q does not select the destination report of app95", r.Query)
		}
	}
}

func TestRequestDurationP99(t *testing.T) {
	addr := prom(t).Address()
	e := NewEngine(reader(), Options{Egress: loopbackAllowed})
	r := analyzeOne(t, e, newCanary("lat", addr, duration(500)))
	v, err := strconv.ParseFloat(r.Value, 64)
	if err != nil || math.Abs(v-wantP99)/wantP99 > 0.01 {
		t.Fatalf("P99 = %q (%v), want %v ms within 1%%", r.Value, err, wantP99)
	}
	if r.Verdict != sluicev1.VerdictPass {
		t.Errorf("verdict %s at max 500, want Pass", r.Verdict)
	}
	if r := analyzeOne(t, e, newCanary("lat", addr, duration(300))); r.Verdict != sluicev1.VerdictFail {
		t.Errorf("verdict %s at max 300, want Fail", r.Verdict)
	}
}

func TestNoData(t *testing.T) {
	addr := prom(t).Address()
	e := NewEngine(reader(
		metricTemplate(ns, "plus-inf", `sum(rate(istio_requests_total{destination_workload="{{ .target }}"}[{{ .interval }}])) / 0`),
		metricTemplate(ns, "minus-inf", `-sum(rate(istio_requests_total{destination_workload="{{ .target }}"}[{{ .interval }}])) / 0`),
		metricTemplate(ns, "nan-scalar", `scalar(vector(0)) / 0`),
	), Options{Egress: loopbackAllowed})
	for _, tc := range []struct {
		name, target string
		metric       sluicev1.CanaryMetric
		why          string
	}{
		{"empty", "ghost", successRate(0), "no series"},
		{"zero over zero", "idle", successRate(0), "NaN"},
		{"zero traffic latency", "idle", duration(1e9), "no series"},
		{"+Inf", "app95", templateMetric("m", "plus-inf"), "+Inf"},
		{"-Inf", "app95", templateMetric("m", "minus-inf"), "-Inf"},
		{"NaN scalar", "app95", templateMetric("m", "nan-scalar"), "NaN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := analyzeOne(t, e, newCanary(tc.target, addr, tc.metric))
			if r.Verdict != sluicev1.VerdictNoData || r.Value != "" || !strings.Contains(r.Message, tc.why) {
				t.Errorf("got %s value %q message %q, want NoData without value, message mentioning %q", r.Verdict, r.Value, r.Message, tc.why)
			}
			if !(Check{Results: []sluicev1.MetricResult{r}}).Failed() {
				t.Error("NoData must count as a failed check")
			}
			skip := tc.metric
			skip.OnNoData = sluicev1.NoDataSkip
			if r := analyzeOne(t, e, newCanary(tc.target, addr, skip)); r.Verdict != sluicev1.VerdictSkipped {
				t.Errorf("with onNoData Skip: got %s, want Skipped", r.Verdict)
			}
		})
	}
}

func TestOnlyErrorsIsZeroNotNoData(t *testing.T) {
	r := analyzeOne(t, NewEngine(reader(), Options{Egress: loopbackAllowed}), newCanary("allerr", prom(t).Address(), successRate(90)))
	if r.Verdict != sluicev1.VerdictFail || r.Value != "0.00" {
		t.Errorf("got %s %q, want Fail 0.00", r.Verdict, r.Value)
	}
}

func TestTwoSeriesIsError(t *testing.T) {
	e := NewEngine(reader(metricTemplate(ns, "by-kind",
		`sum by (kind) (rate(app_errors_total{app="{{ .target }}"}[{{ .interval }}]))`)), Options{Egress: loopbackAllowed})
	r := analyzeOne(t, e, newCanary("two", prom(t).Address(), templateMetric("errors", "by-kind")))
	if r.Verdict != sluicev1.VerdictError || !strings.Contains(r.Message, "2 series") {
		t.Errorf("got %s %q, want Error naming 2 series", r.Verdict, r.Message)
	}
}

func TestStoppedPrometheus(t *testing.T) {
	s, err := promtest.Start(context.Background(), promtest.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	e := NewEngine(reader(), Options{Egress: loopbackAllowed, QueryTimeout: 2 * time.Second})
	c := newCanary("app95", s.Address(), successRate(90))
	r := analyzeOne(t, e, c)
	if r.Verdict != sluicev1.VerdictError || !strings.Contains(r.Message, s.Address()+": "+egress.ReasonUnreachable) {
		t.Errorf("got %s %q, want Error naming %s and the fixed reason %q", r.Verdict, r.Message, s.Address(), egress.ReasonUnreachable)
	}
	err = e.Ready(context.Background(), c)
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), s.Address()) {
		t.Errorf("Ready = %v, want ErrUnreachable naming %s", err, s.Address())
	}
	c.Spec.MetricsServer = prom(t).Address()
	if err := e.Ready(context.Background(), c); err != nil {
		t.Errorf("Ready on a running server = %v", err)
	}
	if err := e.Ready(context.Background(), newCanary("x", "")); err != nil {
		t.Errorf("Ready without metrics = %v", err)
	}
	if err := e.Ready(context.Background(), newCanary("x", "", successRate(1))); !errors.Is(err, ErrNoMetricsServer) {
		t.Errorf("Ready without any address = %v, want ErrNoMetricsServer", err)
	}
}

func TestEscapingInjection(t *testing.T) {
	p := prom(t)
	const injection = `a"} or vector(1) #`
	const tpl = `istio_requests_total{destination_workload="{{ .variables.workload }}"}`
	// Proof that the test means something: substituted raw, the value rewrites the query.
	raw := strings.ReplaceAll(tpl, "{{ .variables.workload }}", injection)
	res, err := p.Query(context.Background(), raw, now)
	if err != nil || !strings.Contains(string(res.Result), `"1"`) {
		t.Fatalf("unescaped query %s = %s, %v; want vector(1)", raw, res.Result, err)
	}

	e := NewEngine(reader(metricTemplate(ns, "inject", tpl)), Options{Egress: loopbackAllowed})
	m := templateMetric("inject", "inject")
	m.TemplateVariables = map[string]string{"workload": injection}
	r := analyzeOne(t, e, newCanary("app95", p.Address(), m))
	if r.Verdict != sluicev1.VerdictNoData {
		t.Errorf("got %s %q, want NoData (a query matching nothing)", r.Verdict, r.Value)
	}
	if want := `destination_workload="a\"} or vector(1) #"`; !strings.Contains(r.Query, want) {
		t.Errorf("query %s does not contain the escaped literal %s", r.Query, want)
	}
}

// TestEscapeRoundTrip has Prometheus parse escaped literals back: each value must come out as
// the label value it went in as.
func TestEscapeRoundTrip(t *testing.T) {
	p := prom(t)
	for _, v := range []string{"plain", `a"b`, `back\slash`, `\"`, `\`, "new\nline", "tab\tcr\r",
		"nul\x00bell\x07del\x7f", "ünï☃de", `a"} or vector(1) #`, `{{ .name }}`, `'single'`, "`tick`"} {
		q := `label_replace(vector(1), "x", "` + EscapeString(v) + `", "", "")`
		res, err := p.Query(context.Background(), q, now)
		if err != nil {
			t.Errorf("%q: %v", v, err)
			continue
		}
		var samples []struct {
			Metric map[string]string `json:"metric"`
		}
		if err := json.Unmarshal(res.Result, &samples); err != nil || len(samples) != 1 {
			t.Errorf("%q: result %s (%v)", v, res.Result, err)
			continue
		}
		if got := samples[0].Metric["x"]; got != v {
			t.Errorf("%q came back as %q", v, got)
		}
	}
}

func TestCompareToPrimary(t *testing.T) {
	addr := prom(t).Address()
	e := NewEngine(reader(), Options{Egress: loopbackAllowed})
	for _, tc := range []struct {
		delta float64
		want  sluicev1.Verdict
	}{{1, sluicev1.VerdictFail}, {2, sluicev1.VerdictPass}, {3, sluicev1.VerdictPass}} {
		m := successRate(90)
		m.CompareToPrimary = &sluicev1.PrimaryComparison{MaxDelta: tc.delta}
		r := analyzeOne(t, e, newCanary("cmp", addr, m))
		if r.Verdict != tc.want || r.Value != "97.00" || r.PrimaryValue != "99.00" {
			t.Errorf("delta %v: got %s %q vs %q, want %s 97.00 vs 99.00", tc.delta, r.Verdict, r.Value, r.PrimaryValue, tc.want)
		}
	}
	// LowerIsBetter on the same numbers: the canary's lower value is better.
	m := successRate(90)
	m.CompareToPrimary = &sluicev1.PrimaryComparison{MaxDelta: 1, Direction: DirectionLowerIsBetter}
	if r := analyzeOne(t, e, newCanary("cmp", addr, m)); r.Verdict != sluicev1.VerdictPass {
		t.Errorf("LowerIsBetter: got %s, want Pass", r.Verdict)
	}
	// The threshold still applies first.
	m = successRate(98)
	m.CompareToPrimary = &sluicev1.PrimaryComparison{MaxDelta: 5}
	if r := analyzeOne(t, e, newCanary("cmp", addr, m)); r.Verdict != sluicev1.VerdictFail || r.PrimaryValue != "99.00" {
		t.Errorf("below threshold: got %s primary %q, want Fail with the primary recorded", r.Verdict, r.PrimaryValue)
	}
	// No primary data: no comparison, never a pass.
	m = successRate(90)
	m.CompareToPrimary = &sluicev1.PrimaryComparison{MaxDelta: 5}
	if r := analyzeOne(t, e, newCanary("app95", addr, m)); r.Verdict != sluicev1.VerdictNoData || !strings.Contains(r.Message, "primary") {
		t.Errorf("no primary data: got %s %q, want NoData about the primary", r.Verdict, r.Message)
	}
}

func TestMinRequestCount(t *testing.T) {
	addr := prom(t).Address()
	e := NewEngine(reader(), Options{Egress: loopbackAllowed})
	withMin := func(m sluicev1.CanaryMetric, n int64) sluicev1.CanaryMetric { m.MinRequestCount = &n; return m }
	for _, tc := range []struct {
		target string
		min    int64
		want   sluicev1.Verdict
	}{
		{"quiet", 100, sluicev1.VerdictSkipped}, // 3 requests a minute
		{"ghost", 1, sluicev1.VerdictSkipped},   // no series at all
		{"idle", 1, sluicev1.VerdictSkipped},    // counters that do not move
		{"quiet", 2, sluicev1.VerdictFail},      // enough requests: judged (100% < 101)
		{"app95", 100, sluicev1.VerdictPass},
	} {
		m := withMin(successRate(90), tc.min)
		if tc.target == "quiet" && tc.want == sluicev1.VerdictFail {
			m = withMin(successRate(101), tc.min)
		}
		r := analyzeOne(t, e, newCanary(tc.target, addr, m))
		if r.Verdict != tc.want {
			t.Errorf("%s min %d: got %s %q, want %s", tc.target, tc.min, r.Verdict, r.Message, tc.want)
		}
		if tc.want == sluicev1.VerdictSkipped && !strings.Contains(r.Message, "minRequestCount") {
			t.Errorf("skip message %q does not explain", r.Message)
		}
	}
	// An idle canary skipped for lack of traffic does not fail the check.
	check := analyze(t, e, newCanary("ghost", addr, withMin(successRate(99), 10), withMin(duration(500), 10)))
	if check.Failed() {
		t.Errorf("skipped metrics failed the check: %s", check.Summary())
	}
}

func TestMeshes(t *testing.T) {
	addr := prom(t).Address()
	e := NewEngine(reader(), Options{Egress: loopbackAllowed})
	for _, tc := range []struct {
		name     string
		target   string
		provider sluicev1.Provider
		mesh     sluicev1.Mesh
		metric   sluicev1.CanaryMetric
		want     string // value; empty for NoData
	}{
		{"linkerd success", "ld", sluicev1.ProviderGatewayAPI, sluicev1.MeshLinkerd, successRate(0), "90.00"},
		{"linkerd latency", "ld", sluicev1.ProviderGatewayAPI, sluicev1.MeshLinkerd, duration(1e6), "375.00"},
		{"envoy gateway success (default mesh of gatewayapi)", "web", sluicev1.ProviderGatewayAPI, "", successRate(0), "98.00"},
		{"envoy gateway latency", "web", sluicev1.ProviderGatewayAPI, sluicev1.MeshEnvoy, duration(1e6), "375.00"},
		{"contour-style clusters", "shop", sluicev1.ProviderGatewayAPI, sluicev1.MeshEnvoy, successRate(0), "80.00"},
		{"envoy gateway default stat names mix backends", "mix", sluicev1.ProviderGatewayAPI, sluicev1.MeshEnvoy, successRate(0), ""},
		{"istio (default mesh of istio)", "app95", sluicev1.ProviderIstio, "", successRate(0), "95.00"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCanary(tc.target, addr, tc.metric)
			c.Spec.Provider, c.Spec.Mesh = tc.provider, tc.mesh
			r := analyzeOne(t, e, c)
			if tc.want == "" {
				if r.Verdict != sluicev1.VerdictNoData {
					t.Errorf("got %s %q, want NoData", r.Verdict, r.Value)
				}
				return
			}
			if r.Verdict != sluicev1.VerdictPass || r.Value != tc.want {
				t.Errorf("got %s %q (%s), want Pass %s", r.Verdict, r.Value, r.Message, tc.want)
			}
		})
	}
	// Envoy comparison reads the primary Service's cluster.
	m := successRate(0)
	m.CompareToPrimary = &sluicev1.PrimaryComparison{MaxDelta: 1}
	c := newCanary("web", addr, m)
	c.Spec.Provider = sluicev1.ProviderGatewayAPI
	if r := analyzeOne(t, e, c); r.Verdict != sluicev1.VerdictFail || r.PrimaryValue != "100.00" {
		t.Errorf("envoy comparison: got %s primary %q, want Fail against 100.00", r.Verdict, r.PrimaryValue)
	}
}

// countingProxy forwards to Prometheus and counts queries.
func countingProxy(t *testing.T, target string) (*httptest.Server, *atomic.Int64) {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1/query" {
			n.Add(1)
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func TestQueriesPerMetric(t *testing.T) {
	proxy, n := countingProxy(t, prom(t).Address())
	e := NewEngine(reader(), Options{Egress: loopbackAllowed})
	minCount := func(m sluicev1.CanaryMetric, c int64) sluicev1.CanaryMetric { m.MinRequestCount = &c; return m }
	compare := func(m sluicev1.CanaryMetric) sluicev1.CanaryMetric {
		m.CompareToPrimary = &sluicev1.PrimaryComparison{MaxDelta: 5}
		return m
	}
	for _, tc := range []struct {
		name   string
		target string
		metric sluicev1.CanaryMetric
		want   int64
	}{
		{"plain", "cmp", successRate(90), 1},
		{"comparison", "cmp", compare(successRate(90)), 2},
		{"minRequestCount", "cmp", minCount(successRate(90), 10), 2},
		{"both", "cmp", minCount(compare(successRate(90)), 10), 3},
		{"skipped by count", "quiet", minCount(compare(successRate(90)), 1000), 1},
	} {
		n.Store(0)
		analyzeOne(t, e, newCanary(tc.target, proxy.URL, tc.metric))
		if got := n.Load(); got != tc.want {
			t.Errorf("%s: %d queries, want %d", tc.name, got, tc.want)
		}
	}
	if got := e.clients.len(); got != 1 {
		t.Errorf("%d cached clients for one server, want 1", got)
	}
}

func TestConcurrentAnalyze(t *testing.T) {
	addr := prom(t).Address()
	e := NewEngine(reader(), Options{Egress: loopbackAllowed})
	c := newCanary("app95", addr, successRate(90), duration(500))
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			check, err := e.Analyze(context.Background(), c, now)
			if err != nil {
				errs <- err
				return
			}
			if check.Results[0].Verdict != sluicev1.VerdictPass || check.Results[0].Value != "95.00" {
				errs <- errors.New(check.Summary())
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := e.clients.len(); got != 1 {
		t.Errorf("%d cached clients, want 1", got)
	}
}

func TestAnalyzeSpecErrors(t *testing.T) {
	e := NewEngine(reader(), Options{Egress: loopbackAllowed, ScrapeInterval: 30 * time.Second})
	c := newCanary("app95", "http://127.0.0.1:1", successRate(90), successRate(80))
	if _, err := e.Analyze(context.Background(), c, now); !errors.Is(err, ErrInvalidSpec) {
		t.Errorf("duplicate names: err = %v, want ErrInvalidSpec", err)
	}
	m := successRate(90)
	m.Interval = "45s"
	c = newCanary("app95", "http://127.0.0.1:1", m)
	if _, err := e.Analyze(context.Background(), c, now); !errors.Is(err, ErrIntervalTooShort) {
		t.Errorf("45s window with 30s scrapes: err = %v, want ErrIntervalTooShort", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.Analyze(ctx, newCanary("app95", prom(t).Address(), successRate(1)), now); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled context: err = %v, want context.Canceled", err)
	}
}

func TestResultsInSpecOrder(t *testing.T) {
	addr := prom(t).Address()
	tpl := metricTemplate(ns, "const", `vector({{ .variables.v }})`)
	e := NewEngine(reader(tpl), Options{Egress: loopbackAllowed, MaxConcurrentMetrics: 3})
	var metrics []sluicev1.CanaryMetric
	for i := range 10 {
		m := templateMetric("m"+strconv.Itoa(i), "const")
		m.TemplateVariables = map[string]string{"v": strconv.Itoa(i)}
		metrics = append(metrics, m)
	}
	check := analyze(t, e, newCanary("app95", addr, metrics...))
	for i, r := range check.Results {
		if r.Name != "m"+strconv.Itoa(i) || r.Value != strconv.Itoa(i)+".00" || r.Verdict != sluicev1.VerdictPass {
			t.Errorf("result %d = %s %s %q", i, r.Name, r.Verdict, r.Value)
		}
	}
}
