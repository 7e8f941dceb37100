package analysis

import (
	"context"
	"fmt"
	"math"
	"os"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/egress"
	"sluice.dev/sluice/test/promtest"
)

// loopbackAllowed is the egress policy of the tests, whose Prometheus and receivers listen on
// 127.0.0.1: the default policy refuses loopback.
var loopbackAllowed = func() *egress.Policy {
	p, err := egress.NewPolicy(egress.Options{AllowTo: []string{egress.Loopback}})
	if err != nil {
		panic(err)
	}
	return p
}()

// The backfilled data set: every series from t0 to t0+30m, one sample every 15s; checks run at
// now = t0+20m over the default 1m window.
var (
	t0   = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	tEnd = t0.Add(30 * time.Minute)
	now  = t0.Add(20 * time.Minute)
)

const (
	ns   = "test"
	step = 15 * time.Second
)

// latencyBuckets give a P99 of exactly 375 ms: 990 of 1000 observations per second fall at or
// below 250 + (990-980)/(1000-980) * (500-250) by linear interpolation in the (250, 500] bucket.
var latencyBuckets = map[float64]float64{10: 500, 50: 800, 100: 900, 250: 980, 500: 1000, 1000: 1000, math.Inf(1): 1000}

const wantP99 = 375.0

func fixtures() []promtest.Series {
	var s []promtest.Series
	counter := func(name string, labels map[string]string, perSecond float64) {
		s = append(s, promtest.Counter(name, labels, t0, tEnd, step, perSecond))
	}
	istio := func(workload, code string, perSecond float64) {
		counter("istio_requests_total", map[string]string{
			"reporter": "destination", "destination_workload_namespace": ns,
			"destination_workload": workload, "response_code": code,
		}, perSecond)
	}
	istio("app95", "200", 95)
	istio("app95", "500", 5)
	istio("cmp", "200", 97)
	istio("cmp", "503", 3)
	istio("cmp-primary", "200", 99)
	istio("cmp-primary", "500", 1)
	istio("idle", "200", 0)     // 0/0
	istio("quiet", "200", 0.05) // 3 requests a minute
	istio("allerr", "500", 2)   // no non-5xx series at all
	// The source-side report of app95 must not count.
	counter("istio_requests_total", map[string]string{
		"reporter": "source", "destination_workload_namespace": ns,
		"destination_workload": "app95", "response_code": "500",
	}, 1000)
	s = append(s, promtest.Histogram("istio_request_duration_milliseconds", map[string]string{
		"reporter": "destination", "destination_workload_namespace": ns, "destination_workload": "lat",
	}, t0, tEnd, step, latencyBuckets)...)

	linkerd := func(class string, perSecond float64) {
		counter("response_total", map[string]string{
			"direction": "inbound", "namespace": ns, "deployment": "ld", "classification": class, "status_code": "200",
		}, perSecond)
	}
	linkerd("success", 90)
	linkerd("failure", 10)
	s = append(s, promtest.Histogram("response_latency_ms", map[string]string{
		"direction": "inbound", "namespace": ns, "deployment": "ld",
	}, t0, tEnd, step, latencyBuckets)...)

	envoy := func(cluster, code string, perSecond float64) {
		counter("envoy_cluster_upstream_rq", map[string]string{
			"envoy_cluster_name": cluster, "envoy_response_code": code,
		}, perSecond)
	}
	// Envoy Gateway with clusterStatName ".../%BACKEND_REFS%" and one cluster per backendRef.
	envoy("httproute/test/web/rule/0/test/web-canary", "200", 98)
	envoy("httproute/test/web/rule/0/test/web-canary", "503", 2)
	envoy("httproute/test/web/rule/0/test/web-primary", "200", 100)
	// Contour (and Flagger) naming: namespace_service_port.
	envoy("test_shop-canary_80", "200", 80)
	envoy("test_shop-canary_80", "500", 20)
	// Envoy Gateway's default: one cluster for every backend of the rule.
	envoy("httproute/test/mix/rule/0", "200", 50)
	envoy("httproute/test/mix/rule/0/test/mix-primary|test/mix-canary", "200", 50)
	s = append(s, promtest.Histogram("envoy_cluster_upstream_rq_time", map[string]string{
		"envoy_cluster_name": "httproute/test/web/rule/0/test/web-canary",
	}, t0, tEnd, step, latencyBuckets)...)

	// For templates.
	counter("app_errors_total", map[string]string{"app": "two", "kind": "a"}, 1)
	counter("app_errors_total", map[string]string{"app": "two", "kind": "b"}, 2)
	// One series in this namespace and one in another whose labels must never reach a tenant of
	// this one (confine_test.go).
	s = append(s, promtest.Gauge("tenant_secret_info", map[string]string{"namespace": ns, "secret": "mine"}, t0, tEnd, step, 1),
		promtest.Gauge("tenant_secret_info", map[string]string{"namespace": "other", "secret": "payments-db-password"}, t0, tEnd, step, 1))
	return s
}

var shared struct {
	once sync.Once
	srv  *promtest.Server
	err  error
}

// prom returns the package's Prometheus with the fixtures backfilled, starting it on first use.
func prom(t testing.TB) *promtest.Server {
	t.Helper()
	shared.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		shared.srv, shared.err = promtest.Start(ctx, promtest.Config{Series: fixtures()})
	})
	if shared.err != nil {
		t.Fatalf("starting Prometheus: %v", shared.err)
	}
	return shared.srv
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.srv != nil {
		if err := shared.srv.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping Prometheus:", err)
		}
	}
	os.Exit(code)
}

// newCanary returns a Canary in ns with target and metrics, reading Prometheus at address.
func newCanary(target, address string, metrics ...sluicev1.CanaryMetric) *sluicev1.Canary {
	return &sluicev1.Canary{
		ObjectMeta: metav1.ObjectMeta{Name: target, Namespace: ns},
		Spec: sluicev1.CanarySpec{
			TargetRef:     sluicev1.TargetReference{Kind: "Deployment", Name: target},
			Provider:      sluicev1.ProviderIstio,
			MetricsServer: address,
			Service:       sluicev1.CanaryService{Port: 80},
			Analysis:      sluicev1.CanaryAnalysis{Interval: "1m", Metrics: metrics},
		},
	}
}

func successRate(min float64) sluicev1.CanaryMetric {
	return sluicev1.CanaryMetric{Name: sluicev1.MetricRequestSuccessRate, ThresholdRange: &sluicev1.ThresholdRange{Min: &min}}
}

func duration(max float64) sluicev1.CanaryMetric {
	return sluicev1.CanaryMetric{Name: sluicev1.MetricRequestDuration, ThresholdRange: &sluicev1.ThresholdRange{Max: &max}}
}

// templateMetric is a MetricTemplate metric with a threshold any value of the fixtures meets
// (a metric needs one: without it, it would pass whatever it measured).
func templateMetric(name, template string) sluicev1.CanaryMetric {
	lowest := -1e9
	return sluicev1.CanaryMetric{Name: name, TemplateRef: &sluicev1.CrossNamespaceObjectReference{Name: template},
		ThresholdRange: &sluicev1.ThresholdRange{Min: &lowest}}
}

func metricTemplate(namespace, name, query string) *sluicev1.MetricTemplate {
	return &sluicev1.MetricTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       sluicev1.MetricTemplateSpec{Query: query},
	}
}

func testScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := sluicev1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

// reader returns a fake client holding objs, for MetricTemplate and Secret lookups.
func reader(objs ...client.Object) client.Reader {
	return fake.NewClientBuilder().WithScheme(testScheme()).WithObjects(objs...).Build()
}

func secret(name string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

// analyze runs one Analyze and fails the test on an error.
func analyze(t *testing.T, e *Engine, c *sluicev1.Canary) Check {
	t.Helper()
	check, err := e.Analyze(context.Background(), c, now)
	if err != nil {
		t.Fatalf("Analyze: %v", err)
	}
	if len(check.Results) != len(c.Spec.Analysis.Metrics) {
		t.Fatalf("got %d results for %d metrics", len(check.Results), len(c.Spec.Analysis.Metrics))
	}
	return check
}

// analyzeOne analyzes a Canary with one metric and returns its result.
func analyzeOne(t *testing.T, e *Engine, c *sluicev1.Canary) sluicev1.MetricResult {
	t.Helper()
	r := analyze(t, e, c).Results[0]
	t.Logf("%s: %s value=%q primary=%q range=%q msg=%q query=%s", r.Name, r.Verdict, r.Value, r.PrimaryValue, r.ThresholdRange, r.Message, r.Query)
	return r
}
