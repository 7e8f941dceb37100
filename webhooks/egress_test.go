package webhooks

import (
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"sluice.dev/sluice/egress"
)

// TestDefaultPolicyRefusesLoopback: without an egress option the runner uses the default policy,
// which refuses a receiver on 127.0.0.1 before calling it; the message says why without naming
// the address or the port.
func TestDefaultPolicyRefusesLoopback(t *testing.T) {
	t.Parallel()
	srv := newServer(t, ok)
	r := NewRunner(Options{})
	t.Cleanup(r.Close)
	res, _ := pollUntilDone(t, r, "k", hook("gate", srv.URL+"/gate", ""), 5*time.Second)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	if res.State != Failed || !strings.Contains(res.Message, "loopback") ||
		strings.Contains(res.Message, "127.0.0.1") || strings.Contains(res.Message, port) {
		t.Errorf("result = %+v; want Failed with a loopback refusal naming no address or port", res)
	}
	if n := srv.requests.Load(); n != 0 {
		t.Errorf("the receiver got %d requests", n)
	}
}

// TestTLSFailureIsAFixedReason: a receiver whose certificate is not trusted fails the call with
// egress.ReasonTLS; the certificate's names and the address stay out of the message.
func TestTLSFailureIsAFixedReason(t *testing.T) {
	t.Parallel()
	srv := httptest.NewUnstartedServer(http.NotFoundHandler())
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the failed handshake
	srv.StartTLS()
	t.Cleanup(srv.Close)
	r := newRunner(t, Options{})
	res, _ := pollUntilDone(t, r, "k", hook("gate", srv.URL, ""), 5*time.Second)
	if res.State != Failed || res.Message != egress.ReasonTLS {
		t.Errorf("result = %+v; want Failed with %q", res, egress.ReasonTLS)
	}
}
