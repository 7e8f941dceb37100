package promtest

import (
	"context"
	"testing"
	"time"
)

// StartT starts a server for t (see Start) and stops it in t.Cleanup, also when the test fails;
// a failed test gets the tail of the server's log. It fails the test when the server cannot
// start (install Prometheus with hack/install-prometheus.sh).
func StartT(t testing.TB, cfg Config) *Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := Start(ctx, cfg)
	if err != nil {
		t.Fatalf("starting Prometheus: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("prometheus at %s, log tail:\n%s", s.Address(), s.Logs())
		}
		if err := s.Stop(); err != nil {
			t.Errorf("stopping Prometheus: %v", err)
		}
	})
	return s
}
