package meshsim

import (
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// istioBuckets are Istio's default buckets for istio_request_duration_milliseconds.
var istioBuckets = []float64{0.5, 1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, 300000, 600000, 1800000, 3600000}

// linkerdBuckets are the linkerd2-proxy's buckets for response_latency_ms.
var linkerdBuckets = []float64{1, 2, 3, 4, 5, 10, 20, 30, 40, 50, 100, 200, 300, 400, 500, 1000, 2000, 3000, 4000, 5000, 10000, 20000, 30000, 40000, 50000}

// istioLabels are the labels of Istio's standard metrics the simulator fills in (the principals,
// clusters and gRPC status are left out).
var istioLabels = []string{
	"reporter",
	"source_workload", "source_workload_namespace", "source_app",
	"destination_workload", "destination_workload_namespace", "destination_app", "destination_version",
	"destination_service", "destination_service_name", "destination_service_namespace",
	"request_protocol", "response_code", "response_flags", "connection_security_policy",
}

var (
	linkerdRequestLabels  = []string{"direction", "authority", "tls", "namespace", "deployment"}
	linkerdLatencyLabels  = append(append([]string(nil), linkerdRequestLabels...), "status_code")
	linkerdResponseLabels = append(append([]string(nil), linkerdLatencyLabels...), "classification")
)

type metrics struct {
	registry *prometheus.Registry

	istioRequests *prometheus.CounterVec
	istioDuration *prometheus.HistogramVec

	linkerdRequests  *prometheus.CounterVec
	linkerdResponses *prometheus.CounterVec
	linkerdLatency   *prometheus.HistogramVec
}

func newMetrics(flavor Flavor) *metrics {
	m := &metrics{registry: prometheus.NewRegistry()}
	if flavor&Istio != 0 {
		m.istioRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "istio_requests_total",
			Help: "Requests handled (simulated by sluice meshsim).",
		}, istioLabels)
		m.istioDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "istio_request_duration_milliseconds",
			Help:    "Request duration in milliseconds (simulated by sluice meshsim).",
			Buckets: istioBuckets,
		}, istioLabels)
		m.registry.MustRegister(m.istioRequests, m.istioDuration)
	}
	if flavor&Linkerd != 0 {
		m.linkerdRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "request_total",
			Help: "Total count of HTTP requests (simulated by sluice meshsim).",
		}, linkerdRequestLabels)
		m.linkerdResponses = prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "response_total",
			Help: "Total count of HTTP responses (simulated by sluice meshsim).",
		}, linkerdResponseLabels)
		m.linkerdLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "response_latency_ms",
			Help:    "Elapsed times between a request's headers being received and its response stream completing (simulated by sluice meshsim).",
			Buckets: linkerdBuckets,
		}, linkerdLatencyLabels)
		m.registry.MustRegister(m.linkerdRequests, m.linkerdResponses, m.linkerdLatency)
	}
	return m
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{Registry: m.registry})
}

// observe records one request answered by backend b.
func (m *metrics) observe(opts Options, b *Backend, code int, flags string, latencyMs float64) {
	ns := opts.Namespace
	workload := b.Workload
	if workload == "" {
		workload = "unknown"
	}
	host := b.Service + "." + ns + ".svc.cluster.local"
	status := strconv.Itoa(code)
	if m.istioRequests != nil {
		l := prometheus.Labels{
			"reporter":                       "destination",
			"source_workload":                opts.SourceWorkload,
			"source_workload_namespace":      ns,
			"source_app":                     opts.SourceWorkload,
			"destination_workload":           workload,
			"destination_workload_namespace": ns,
			"destination_app":                b.App,
			"destination_version":            b.Version,
			"destination_service":            host,
			"destination_service_name":       b.Service,
			"destination_service_namespace":  ns,
			"request_protocol":               "http",
			"response_code":                  status,
			"response_flags":                 flags,
			"connection_security_policy":     "mutual_tls",
		}
		m.istioRequests.With(l).Inc()
		m.istioDuration.With(l).Observe(latencyMs)
	}
	if m.linkerdRequests != nil {
		l := prometheus.Labels{
			"direction":  "inbound",
			"authority":  host,
			"tls":        "true",
			"namespace":  ns,
			"deployment": workload,
		}
		m.linkerdRequests.With(l).Inc()
		l["status_code"] = status
		m.linkerdLatency.With(l).Observe(latencyMs)
		l["classification"] = "success"
		if code >= 500 {
			l["classification"] = "failure"
		}
		m.linkerdResponses.With(l).Inc()
	}
}
