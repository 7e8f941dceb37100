package analysis

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/egress"
)

// TestDefaultPolicyRefusesLoopbackMetricsServer: with the default egress policy (no Egress
// option), a metricsServer on 127.0.0.1 is refused before any request: the check is an Error
// saying so, Ready reports egress.ErrRefused (not unreachable), and the server sees nothing.
func TestDefaultPolicyRefusesLoopbackMetricsServer(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer srv.Close()
	e := NewEngine(reader(), Options{})
	c := newCanary("app95", srv.URL, successRate(90))
	r := analyzeOne(t, e, c)
	if r.Verdict != sluicev1.VerdictError || !strings.Contains(r.Message, "a loopback address") {
		t.Errorf("got %s %q, want Error refusing a loopback address", r.Verdict, r.Message)
	}
	if err := e.Ready(context.Background(), c); !errors.Is(err, egress.ErrRefused) || errors.Is(err, ErrUnreachable) {
		t.Errorf("Ready = %v, want egress.ErrRefused", err)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the metrics server got %d requests", n)
	}
}

// TestQueryErrorNamesNoResolvedAddress: a refusal at dial time (a configured name resolving to a
// refused address) and a connection error are reported with the configured address and a fixed
// reason; the resolved address and port in the error go to the debug log only.
func TestQueryErrorNamesNoResolvedAddress(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	target := "http://" + l.Addr().String() + "/api/v1/query"
	_ = l.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	const configured = "http://prometheus.monitoring:9090"

	refused := (*egress.Policy)(nil).Client(nil)
	_, dialErr := refused.Get(target)
	_, connErr := loopbackAllowed.Client(nil).Get(target)
	if dialErr == nil || connErr == nil || !strings.Contains(dialErr.Error(), port) || !strings.Contains(connErr.Error(), port) {
		t.Fatalf("want errors naming the port: %v; %v", dialErr, connErr)
	}
	for _, tc := range []struct {
		err    error
		is     error
		reason string
	}{
		{dialErr, egress.ErrRefused, egress.ReasonRefused},
		{connErr, ErrUnreachable, egress.ReasonUnreachable},
	} {
		got := queryError(context.Background(), configured, tc.err)
		msg := got.Error()
		if !errors.Is(got, tc.is) || !strings.Contains(msg, "prometheus.monitoring:9090") || !strings.HasSuffix(msg, tc.reason) {
			t.Errorf("queryError(%v) = %q, want %v naming the configured address, ending in %q", tc.err, msg, tc.is, tc.reason)
		}
		if strings.Contains(msg, "127.0.0.1") || strings.Contains(msg, port) {
			t.Errorf("queryError message %q names the resolved address or port", msg)
		}
	}
}
