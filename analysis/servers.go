package analysis

import (
	"context"
	"fmt"
	"strings"
	"time"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

const (
	// DefaultMaxMetricsServers is Options.MaxMetricsServers when unset.
	DefaultMaxMetricsServers = 4
	// DefaultReadyTimeout is Options.ReadyTimeout when unset.
	DefaultReadyTimeout = 3 * time.Second
)

// metricServer is the server one metric queries, or why it cannot be determined.
type metricServer struct {
	metric string
	srv    server
	err    error
}

// metricServers resolves the server of every metric of c (serverFor), in spec order; reads go
// through the engine's reader (the cache).
func (e *Engine) metricServers(ctx context.Context, c *sluicev1.Canary) []metricServer {
	out := make([]metricServer, 0, len(c.Spec.Analysis.Metrics))
	for i := range c.Spec.Analysis.Metrics {
		m := &c.Spec.Analysis.Metrics[i]
		s, _, err := e.serverFor(ctx, c, m)
		out = append(out, metricServer{metric: m.Name, srv: s, err: err})
	}
	return out
}

// checkServerCap refuses metrics that use more than MaxMetricsServers distinct server addresses,
// so one Canary cannot make a check or a reachability probe wait on many servers. Metrics whose
// server cannot be determined do not count. errors: ErrTooManyServers naming the metrics that use
// servers beyond the first MaxMetricsServers (in spec order).
func (e *Engine) checkServerCap(servers []metricServer) error {
	seen := map[string]bool{}
	var beyond []string
	for _, ms := range servers {
		if ms.err != nil || seen[ms.srv.address] {
			continue
		}
		if len(seen) >= e.opts.MaxMetricsServers {
			beyond = append(beyond, fmt.Sprintf("%q", ms.metric))
			continue
		}
		seen[ms.srv.address] = true
	}
	if len(beyond) == 0 {
		return nil
	}
	return fmt.Errorf("%w: the metrics use more than %d distinct metrics servers: metrics %s would query servers beyond the first %d; use fewer servers (for instance one Prometheus that federates the others)",
		ErrTooManyServers, e.opts.MaxMetricsServers, strings.Join(beyond, ", "), e.opts.MaxMetricsServers)
}
