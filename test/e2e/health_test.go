package e2e

import (
	"fmt"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"
)

// healthExporter serves fleet_health{namespace=...} gauges for Prometheus to scrape.
type healthExporter struct {
	addr string
	mu   sync.Mutex
	vals map[string]float64
}

func startHealthExporter(t *testing.T) *healthExporter {
	t.Helper()
	h := &healthExporter{vals: map[string]float64{"sluice-system": 1}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	h.addr = ln.Addr().String()
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		h.mu.Lock()
		defer h.mu.Unlock()
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprintln(w, "# TYPE fleet_health gauge")
		for ns, v := range h.vals {
			fmt.Fprintf(w, "fleet_health{namespace=%q} %g\n", ns, v)
		}
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return h
}

func (h *healthExporter) set(ns string, v float64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.vals[ns] = v
}
