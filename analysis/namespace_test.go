package analysis

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/test/promtest"
)

// namespaceFixtures are whole-namespace series: Linkerd namespace mesh-a (two workloads, 99.5 %
// inbound success; outbound failures and another namespace must not count), Istio namespace mesh-c
// (97.5 % on the destination side; the source side must not count), a quiet namespace, and a
// per-namespace gauge for templates.
func namespaceFixtures() []promtest.Series {
	var s []promtest.Series
	counter := func(name string, labels map[string]string, perSecond float64) {
		s = append(s, promtest.Counter(name, labels, t0, tEnd, step, perSecond))
	}
	linkerd := func(ns, deployment, direction, class string, perSecond float64) {
		counter("response_total", map[string]string{"direction": direction, "namespace": ns, "deployment": deployment,
			"classification": class, "status_code": "200"}, perSecond)
	}
	linkerd("mesh-a", "web", "inbound", "success", 99)
	linkerd("mesh-a", "web", "inbound", "failure", 1)
	linkerd("mesh-a", "api", "inbound", "success", 100)
	linkerd("mesh-a", "web", "outbound", "failure", 500)
	linkerd("mesh-b", "web", "inbound", "failure", 100)
	linkerd("quiet", "web", "inbound", "success", 0.05)
	s = append(s, promtest.Histogram("response_latency_ms", map[string]string{
		"direction": "inbound", "namespace": "mesh-a", "deployment": "web",
	}, t0, tEnd, step, latencyBuckets)...)
	istio := func(reporter, ns, workload, code string, perSecond float64) {
		counter("istio_requests_total", map[string]string{"reporter": reporter, "destination_workload_namespace": ns,
			"destination_workload": workload, "response_code": code}, perSecond)
	}
	istio("destination", "mesh-c", "x", "200", 95)
	istio("destination", "mesh-c", "x", "503", 5)
	istio("destination", "mesh-c", "y", "200", 100)
	istio("source", "mesh-c", "x", "500", 1000)
	for ns, v := range map[string]float64{"mesh-a": 1, "mesh-b": 0, `we"ird`: 1} {
		s = append(s, promtest.Gauge("fleet_health", map[string]string{"namespace": ns}, t0, tEnd, step, v))
	}
	return s
}

func TestAnalyzeNamespace(t *testing.T) {
	srv := promtest.StartT(t, promtest.Config{Series: namespaceFixtures()})
	tpl := metricTemplate("sluice-system", "fleet-health", `min(fleet_health{namespace="{{ .namespace }}"})`)
	e := NewEngine(reader(tpl), Options{Egress: loopbackAllowed, DefaultAddress: srv.Address()})
	min := func(v float64) *sluicev1.ThresholdRange { return &sluicev1.ThresholdRange{Min: &v} }
	health := sluicev1.CanaryMetric{Name: "fleet-health", ThresholdRange: min(1),
		TemplateRef: &sluicev1.CrossNamespaceObjectReference{Name: "fleet-health", Namespace: "sluice-system"}}
	one := func(t *testing.T, a NamespaceAnalysis) sluicev1.MetricResult {
		t.Helper()
		if a.Name == "" {
			a.Name = "upgrade"
		}
		check, err := e.AnalyzeNamespace(context.Background(), a, now)
		if err != nil {
			t.Fatalf("AnalyzeNamespace: %v", err)
		}
		if len(check.Results) != 1 {
			t.Fatalf("%d results", len(check.Results))
		}
		r := check.Results[0]
		t.Logf("%s: %s value=%q msg=%q query=%s", r.Name, r.Verdict, r.Value, r.Message, r.Query)
		return r
	}
	for _, tc := range []struct {
		name    string
		a       NamespaceAnalysis
		verdict sluicev1.Verdict
		value   string
		query   string // a substring of the query
		message string // a substring of the message
	}{
		{"linkerd success rate of the whole namespace", NamespaceAnalysis{Namespace: "mesh-a", Mesh: sluicev1.MeshLinkerd,
			Metrics: []sluicev1.CanaryMetric{successRate(99)}}, sluicev1.VerdictPass, "99.50", `direction="inbound",namespace="mesh-a"`, ""},
		{"linkerd failing namespace", NamespaceAnalysis{Namespace: "mesh-b", Mesh: sluicev1.MeshLinkerd,
			Metrics: []sluicev1.CanaryMetric{successRate(99)}}, sluicev1.VerdictFail, "0.00", "", "below the minimum 99"},
		{"linkerd P99 of the namespace", NamespaceAnalysis{Namespace: "mesh-a", Mesh: sluicev1.MeshLinkerd,
			Metrics: []sluicev1.CanaryMetric{duration(500)}}, sluicev1.VerdictPass, "375.00", "response_latency_ms_bucket", ""},
		{"istio destination side only", NamespaceAnalysis{Namespace: "mesh-c", Mesh: sluicev1.MeshIstio,
			Metrics: []sluicev1.CanaryMetric{successRate(97)}}, sluicev1.VerdictPass, "97.50",
			`reporter="destination",destination_workload_namespace="mesh-c"`, ""},
		{"idle namespace is no data", NamespaceAnalysis{Namespace: "idle", Mesh: sluicev1.MeshIstio,
			Metrics: []sluicev1.CanaryMetric{successRate(99)}}, sluicev1.VerdictNoData, "", "", ""},
		{"minRequestCount skips a quiet namespace", NamespaceAnalysis{Namespace: "quiet", Mesh: sluicev1.MeshLinkerd,
			Metrics: []sluicev1.CanaryMetric{{Name: sluicev1.MetricRequestSuccessRate, ThresholdRange: min(99), MinRequestCount: int64p(100)}}},
			sluicev1.VerdictSkipped, "", "sum(increase(response_total", "namespace quiet served 3 requests in the last 1m"},
		{"template sees the namespace", NamespaceAnalysis{Namespace: "mesh-a", Mesh: sluicev1.MeshLinkerd,
			Metrics: []sluicev1.CanaryMetric{health}}, sluicev1.VerdictPass, "1.00", `fleet_health{namespace="mesh-a"}`, ""},
		{"template fails a namespace", NamespaceAnalysis{Namespace: "mesh-b", Mesh: sluicev1.MeshLinkerd,
			Metrics: []sluicev1.CanaryMetric{health}}, sluicev1.VerdictFail, "0.00", `fleet_health{namespace="mesh-b"}`, ""},
		{"template namespace is escaped", NamespaceAnalysis{Namespace: `we"ird`, Mesh: sluicev1.MeshLinkerd,
			Metrics: []sluicev1.CanaryMetric{health}}, sluicev1.VerdictPass, "1.00", `fleet_health{namespace="we\"ird"}`, ""},
		{"template namespace defaults to TemplateNamespace", NamespaceAnalysis{Namespace: "mesh-a", Mesh: sluicev1.MeshLinkerd,
			TemplateNamespace: "sluice-system", Metrics: []sluicev1.CanaryMetric{{Name: "fleet-health", ThresholdRange: min(1),
				TemplateRef: &sluicev1.CrossNamespaceObjectReference{Name: "fleet-health"}}}}, sluicev1.VerdictPass, "1.00", "", ""},
		{"missing template is an error", NamespaceAnalysis{Namespace: "mesh-a", Mesh: sluicev1.MeshLinkerd,
			Metrics: []sluicev1.CanaryMetric{{Name: "x", TemplateRef: &sluicev1.CrossNamespaceObjectReference{Name: "nope", Namespace: "sluice-system"}}}},
			sluicev1.VerdictError, "", "", "MetricTemplate sluice-system/nope not found"},
		{"metrics server of the analysis wins over the default", NamespaceAnalysis{Namespace: "mesh-a", Mesh: sluicev1.MeshLinkerd,
			MetricsServer: "http://127.0.0.1:1", Metrics: []sluicev1.CanaryMetric{successRate(99)}}, sluicev1.VerdictError, "", "",
			"http://127.0.0.1:1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := one(t, tc.a)
			if r.Verdict != tc.verdict || r.Value != tc.value || !strings.Contains(r.Query, tc.query) || !strings.Contains(r.Message, tc.message) {
				t.Errorf("got %s value %q query %q message %q; want %s value %q query ~%q message ~%q",
					r.Verdict, r.Value, r.Query, r.Message, tc.verdict, tc.value, tc.query, tc.message)
			}
		})
	}
}

func TestValidateNamespaceAnalysis(t *testing.T) {
	ok := NamespaceAnalysis{Namespace: "ns", Mesh: sluicev1.MeshLinkerd, Metrics: []sluicev1.CanaryMetric{successRate(99)}}
	if err := ValidateNamespaceAnalysis(ok, 15*time.Second); err != nil {
		t.Fatalf("valid analysis: %v", err)
	}
	for _, tc := range []struct {
		name   string
		mutate func(*NamespaceAnalysis)
		want   error
		msg    string
	}{
		{"envoy has no namespace built-ins", func(a *NamespaceAnalysis) { a.Mesh = sluicev1.MeshEnvoy }, ErrInvalidSpec, "no per-namespace built-in"},
		{"compareToPrimary", func(a *NamespaceAnalysis) {
			a.Metrics[0].CompareToPrimary = &sluicev1.PrimaryComparison{MaxDelta: 1}
		}, ErrInvalidSpec, "compareToPrimary does not apply"},
		{"unknown name", func(a *NamespaceAnalysis) { a.Metrics[0].Name = "x" }, ErrInvalidSpec, "not a built-in"},
		{"duplicate", func(a *NamespaceAnalysis) { a.Metrics = append(a.Metrics, a.Metrics[0]) }, ErrInvalidSpec, "used twice"},
		{"window too short", func(a *NamespaceAnalysis) { a.Interval = 20 * time.Second }, ErrIntervalTooShort, "shorter than 30s"},
		{"metric window too short", func(a *NamespaceAnalysis) { a.Metrics[0].Interval = "10s" }, ErrIntervalTooShort, "shorter than 30s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := ok
			a.Metrics = append([]sluicev1.CanaryMetric(nil), ok.Metrics...)
			tc.mutate(&a)
			err := ValidateNamespaceAnalysis(a, 15*time.Second)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("got %v, want %v containing %q", err, tc.want, tc.msg)
			}
			if _, err := NewEngine(reader(), Options{Egress: loopbackAllowed, ScrapeInterval: 15 * time.Second}).AnalyzeNamespace(context.Background(), a, now); !errors.Is(err, tc.want) {
				t.Fatalf("AnalyzeNamespace: %v", err)
			}
		})
	}
}

func int64p(v int64) *int64 { return &v }
