package main

import (
	"testing"

	"sluice.dev/sluice/controllers/manager"
)

// TestQueryFlags: by default tenants' queries are confined by the namespace label and a Canary
// may use 4 metrics servers; the flags turn confinement off, change the label and the cap.
func TestQueryFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want manager.TenantQueries
	}{
		{nil, manager.TenantQueries{NamespaceLabel: "namespace", MaxMetricsServers: 4}},
		{[]string{"--confine-tenant-queries=false", "--tenant-namespace-label=k8s_ns", "--max-metrics-servers=2"},
			manager.TenantQueries{Unconfined: true, NamespaceLabel: "k8s_ns", MaxMetricsServers: 2}},
	} {
		cfg, _, err := parseFlags(tc.args)
		if err != nil {
			t.Fatal(err)
		}
		var o manager.Options
		cfg.queries.apply(&o)
		if o.TenantQueries != tc.want {
			t.Errorf("%v: %+v, want %+v", tc.args, o.TenantQueries, tc.want)
		}
	}
}
