package main

import (
	"flag"

	"sluice.dev/sluice/analysis"
	"sluice.dev/sluice/controllers/manager"
)

// queryFlags are the flags of what tenants' metrics queries may read and reach.
type queryFlags struct {
	confine           bool
	namespaceLabel    string
	maxMetricsServers int
}

func (q *queryFlags) bind(fs *flag.FlagSet) {
	fs.BoolVar(&q.confine, "confine-tenant-queries", true,
		"Confine every query a namespace's users wrote (inline metrics[].query, a MetricTemplate outside --controller-namespace) to the Canary's namespace: each series selector gets <--tenant-namespace-label>=\"<namespace>\". false: run them as written (single-tenant clusters).")
	fs.StringVar(&q.namespaceLabel, "tenant-namespace-label", manager.DefaultTenantNamespaceLabel,
		"The series label naming a pod's namespace in the metrics servers, used to confine tenants' queries.")
	fs.IntVar(&q.maxMetricsServers, "max-metrics-servers", analysis.DefaultMaxMetricsServers,
		"Distinct metrics servers one Canary's metrics may use; a Canary using more is stalled.")
}

func (q queryFlags) apply(o *manager.Options) {
	o.TenantQueries = manager.TenantQueries{Unconfined: !q.confine, NamespaceLabel: q.namespaceLabel,
		MaxMetricsServers: q.maxMetricsServers}
}
