package manager

import (
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// metricsOptions serves /metrics on o.MetricsAddr (default :8443) over HTTPS, each request
// authenticated with a TokenReview and authorized with a SubjectAccessReview (verb get on the
// non-resource URL /metrics) against the apiserver: the manager's ServiceAccount needs create on
// tokenreviews and subjectaccessreviews, a scraper a role granting get on /metrics. The
// certificate is tls.crt / tls.key in o.MetricsCertDir, else a self-signed one made at start.
// With o.MetricsInsecure it is plain HTTP without authentication (default :8080; local use only).
func metricsOptions(o Options) metricsserver.Options {
	if o.MetricsInsecure {
		return metricsserver.Options{BindAddress: orDefault(o.MetricsAddr, ":8080")}
	}
	return metricsserver.Options{
		BindAddress:    orDefault(o.MetricsAddr, ":8443"),
		SecureServing:  true,
		FilterProvider: filters.WithAuthenticationAndAuthorization,
		CertDir:        o.MetricsCertDir,
	}
}
