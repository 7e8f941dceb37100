package analysis

import (
	"fmt"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// Built-in metric queries. Each mesh reads a different metric source:
//
//   - istio: the Istio sidecar's standard metrics istio_requests_total and
//     istio_request_duration_milliseconds_bucket, as reported by the server side
//     (reporter="destination"), selected by destination_workload (the Deployment) and
//     destination_workload_namespace.
//   - linkerd: the Linkerd proxy's response_total (label classification="success"/"failure") and
//     response_latency_ms_bucket for inbound traffic (direction="inbound"), selected by the
//     deployment and namespace labels Linkerd's Prometheus scrape config adds.
//   - envoy: Envoy's cluster stats envoy_cluster_upstream_rq (label envoy_response_code) and
//     envoy_cluster_upstream_rq_time_bucket, selected by envoy_cluster_name. The cluster must
//     carry exactly one backend Service, named "<namespace>/<service>" at the end of the stat name
//     (Envoy Gateway with an EnvoyProxy telemetry.metrics.clusterStatName ending in %BACKEND_REFS%
//     and one cluster per backendRef, e.g. "httproute/ns/app/rule/0/ns/app-canary") or
//     "<namespace>_<service>_<port>" (Contour, and Flagger's convention). Envoy Gateway's default
//     stat name "httproute/<ns>/<route>/rule/<n>" covers every backend of the rule and matches
//     nothing here, so the metric reports NoData rather than a primary+canary mix.
//
// Canary-side queries select the canary workload: for istio and linkerd the target Deployment
// (spec.targetRef.name), for envoy the canary Service (<apex>-canary); the primary comparison
// selects <target>-primary and <apex>-primary.

// workload names the pods a built-in query reads.
type workload struct {
	namespace  string
	deployment string // Deployment name (istio, linkerd)
	service    string // backend Service name (envoy)
}

// canaryWorkload returns the canary side of c.
func canaryWorkload(c *sluicev1.Canary) workload {
	return workload{
		namespace:  c.Namespace,
		deployment: c.Spec.TargetRef.Name,
		service:    c.ServiceNames().Canary,
	}
}

// primaryWorkload returns the primary side of c.
func primaryWorkload(c *sluicev1.Canary) workload {
	return workload{
		namespace:  c.Namespace,
		deployment: c.Spec.TargetRef.Name + "-primary",
		service:    c.ServiceNames().Primary,
	}
}

// meshOf returns the mesh whose metrics c's built-ins read: spec.mesh, else istio with provider
// istio, else envoy.
func meshOf(c *sluicev1.Canary) sluicev1.Mesh {
	if c.Spec.Mesh != "" {
		return c.Spec.Mesh
	}
	if c.Spec.Provider == sluicev1.ProviderIstio {
		return sluicev1.MeshIstio
	}
	return sluicev1.MeshEnvoy
}

// isBuiltin reports whether name is a built-in metric.
func isBuiltin(name string) bool {
	return name == sluicev1.MetricRequestSuccessRate || name == sluicev1.MetricRequestDuration
}

// meshMetrics are the metric names and label selectors of one mesh.
type meshMetrics struct {
	requests  string // request counter
	okMatcher string // matcher that keeps non-5xx responses
	latency   string // latency histogram buckets, in milliseconds
	selector  func(w workload) string
}

var meshes = map[sluicev1.Mesh]meshMetrics{
	sluicev1.MeshIstio: {
		requests:  "istio_requests_total",
		okMatcher: `response_code!~"5.."`,
		latency:   "istio_request_duration_milliseconds_bucket",
		selector: func(w workload) string {
			return fmt.Sprintf(`reporter="destination",destination_workload_namespace="%s",destination_workload="%s"`,
				EscapeString(w.namespace), EscapeString(w.deployment))
		},
	},
	sluicev1.MeshLinkerd: {
		requests:  "response_total",
		okMatcher: `classification="success"`,
		latency:   "response_latency_ms_bucket",
		selector: func(w workload) string {
			return fmt.Sprintf(`direction="inbound",namespace="%s",deployment="%s"`,
				EscapeString(w.namespace), EscapeString(w.deployment))
		},
	},
	sluicev1.MeshEnvoy: {
		requests:  "envoy_cluster_upstream_rq",
		okMatcher: `envoy_response_code!~"5.."`,
		latency:   "envoy_cluster_upstream_rq_time_bucket",
		selector: func(w workload) string {
			return fmt.Sprintf(`envoy_cluster_name=~"(.+/)?%s[/_]%s(_[0-9]+)?"`,
				EscapeRegexp(w.namespace), EscapeRegexp(w.service))
		},
	},
}

// builtinQuery returns the PromQL of built-in metric name for workload w over window (a PromQL
// duration such as 1m):
//
//   - request-success-rate: percent 0–100 of non-5xx responses. Zero requests give NaN (no data);
//     no series at all give an empty result (no data); only errors give 0.
//   - request-duration: P99 in milliseconds; NaN (no data) without requests.
//
// errors: ErrInvalidSpec for an unknown mesh or metric name.
func builtinQuery(mesh sluicev1.Mesh, name string, w workload, window string) (string, error) {
	mm, ok := meshes[mesh]
	if !ok {
		return "", fmt.Errorf("%w: unknown mesh %q", ErrInvalidSpec, mesh)
	}
	return mm.builtin(name, mm.selector(w), window)
}

// builtin returns the PromQL of built-in metric name over the series matching sel (see
// builtinQuery). errors: ErrInvalidSpec for an unknown metric name.
func (mm meshMetrics) builtin(name, sel, window string) (string, error) {
	switch name {
	case sluicev1.MetricRequestSuccessRate:
		// "or vector(0)": with only 5xx responses the numerator has no series at all; the rate is 0,
		// not no data. The denominator keeps an idle workload at NaN or empty, both no data.
		return fmt.Sprintf(`100 * (sum(rate(%[1]s{%[2]s,%[3]s}[%[4]s])) or vector(0)) / sum(rate(%[1]s{%[2]s}[%[4]s]))`,
			mm.requests, sel, mm.okMatcher, window), nil
	case sluicev1.MetricRequestDuration:
		return fmt.Sprintf(`histogram_quantile(0.99, sum by (le) (rate(%s{%s}[%s])))`,
			mm.latency, sel, window), nil
	}
	return "", fmt.Errorf("%w: %q is not a built-in metric", ErrInvalidSpec, name)
}

// requestCountQuery returns the PromQL of the number of requests w served within window, for
// minRequestCount. An idle or unknown workload gives an empty result, which counts as 0.
// errors: ErrInvalidSpec for an unknown mesh.
func requestCountQuery(mesh sluicev1.Mesh, w workload, window string) (string, error) {
	mm, ok := meshes[mesh]
	if !ok {
		return "", fmt.Errorf("%w: unknown mesh %q", ErrInvalidSpec, mesh)
	}
	return fmt.Sprintf(`sum(increase(%s{%s}[%s]))`, mm.requests, mm.selector(w), window), nil
}
