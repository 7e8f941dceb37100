package manager

import "sluice.dev/sluice/analysis"

// DefaultTenantNamespaceLabel is the label tenant queries are confined by when
// TenantQueries.NamespaceLabel is empty: the namespace label Prometheus' Kubernetes service
// discovery setups (kube-prometheus, the Prometheus Operator, Istio's and Linkerd's) put on every
// series of a pod.
const DefaultTenantNamespaceLabel = "namespace"

// TenantQueries say what the metrics queries of a namespace's own authors may read. A tenant's
// query is an inline metrics[].query of a Canary outside ControllerNamespace, or a MetricTemplate
// outside ControllerNamespace; both run with the manager's identity against whatever server they
// name or the default one. The zero value is the safe default.
type TenantQueries struct {
	// Unconfined runs tenants' queries as written. Default false: every series selector of such a
	// query gets NamespaceLabel="<the Canary's namespace>", so a tenant reads only its own
	// namespace's series.
	Unconfined bool
	// NamespaceLabel is the label confining a query. Default DefaultTenantNamespaceLabel.
	NamespaceLabel string
	// MaxMetricsServers caps the distinct metrics servers of one Canary. Default
	// analysis.DefaultMaxMetricsServers.
	MaxMetricsServers int
}

// apply sets the analysis options these settings stand for.
func (t TenantQueries) apply(o *analysis.Options) {
	o.MaxMetricsServers = t.MaxMetricsServers
	if t.Unconfined {
		return
	}
	o.TenantNamespaceLabel = t.NamespaceLabel
	if o.TenantNamespaceLabel == "" {
		o.TenantNamespaceLabel = DefaultTenantNamespaceLabel
	}
}
