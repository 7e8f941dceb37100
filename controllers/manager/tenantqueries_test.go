package manager

import (
	"testing"

	"sluice.dev/sluice/analysis"
)

// TestTenantQueriesDefaultToConfined: the zero value confines tenants' queries by the namespace
// label; Unconfined runs them as written; the server cap passes through (zero: the engine's
// default).
func TestTenantQueriesDefaultToConfined(t *testing.T) {
	for _, tc := range []struct {
		in         TenantQueries
		label      string
		maxServers int
	}{
		{TenantQueries{}, "namespace", 0},
		{TenantQueries{NamespaceLabel: "kubernetes_namespace", MaxMetricsServers: 2}, "kubernetes_namespace", 2},
		{TenantQueries{Unconfined: true, NamespaceLabel: "x"}, "", 0},
	} {
		var o analysis.Options
		tc.in.apply(&o)
		if o.TenantNamespaceLabel != tc.label || o.MaxMetricsServers != tc.maxServers {
			t.Errorf("%+v: label %q, max servers %d; want %q, %d", tc.in, o.TenantNamespaceLabel, o.MaxMetricsServers, tc.label, tc.maxServers)
		}
	}
}
