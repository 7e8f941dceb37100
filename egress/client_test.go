package egress

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// countingServer is a real HTTP listener on 127.0.0.1 that counts the connections it accepts.
func countingServer(t *testing.T, tlsServer bool) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var accepted atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the TLS tests' failed handshakes
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			accepted.Add(1)
		}
	}
	if tlsServer {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return srv, &accepted
}

func get(ctx context.Context, c *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err == nil {
		_ = resp.Body.Close()
	}
	return err
}

// TestDialRefusesLoopbackBeforeConnecting: the client of the default policy (and of a nil one)
// refuses http://127.0.0.1:port, http://[::ffff:127.0.0.1]:port and "localhost" in the dialer's
// Control hook, before connect: the listener accepts no connection. "localhost" is refused even
// when it is on the allow-list (a name admits nothing the classes refuse, as with an ExternalName
// Service resolving to loopback). With loopback allowed, the same listener is reached.
func TestDialRefusesLoopbackBeforeConnecting(t *testing.T) {
	srv, accepted := countingServer(t, false)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	byName := mustPolicy(t, Options{AllowedDestinations: []string{"localhost", "127.0.0.1"}})
	for _, tc := range []struct {
		policy *Policy
		url    string
	}{
		{nil, srv.URL},
		{mustPolicy(t, Options{}), srv.URL},
		{mustPolicy(t, Options{}), "http://[::ffff:127.0.0.1]:" + port + "/"},
		{byName, "http://localhost:" + port + "/"},
		{byName, srv.URL},
		{mustPolicy(t, Options{AllowTo: []string{Cluster}, ClusterCIDRs: []string{"10.0.0.0/8"}}), srv.URL},
	} {
		err := get(ctx, tc.policy.Client(nil), tc.url)
		var refused *RefusedError
		if !errors.Is(err, ErrRefused) || !errors.As(err, &refused) || !strings.Contains(err.Error(), "loopback") {
			t.Errorf("%s with %s: error %v, want a loopback refusal from the dialer", tc.url, tc.policy, err)
		}
		if got := Reason(err); got != ReasonRefused {
			t.Errorf("%s: Reason = %q, want %q", tc.url, got, ReasonRefused)
		}
	}
	if n := accepted.Load(); n != 0 {
		t.Fatalf("the listener accepted %d connections: a refusal came after connecting", n)
	}

	allowed := mustPolicy(t, Options{AllowTo: []string{Loopback}, AllowedDestinations: []string{"localhost"}})
	if err := get(ctx, allowed.Client(nil), "http://localhost:"+port+"/"); err != nil {
		t.Fatalf("loopback allowed, localhost on the allow-list: %v", err)
	}
	if accepted.Load() != 1 {
		t.Fatalf("the listener accepted %d connections, want 1", accepted.Load())
	}
}

// TestReasons: real failures of each kind map to one fixed reason, and neither the reason nor
// Summary's message carries the address, the port or the certificate's names, which the error
// itself does.
func TestReasons(t *testing.T) {
	loop := mustPolicy(t, Options{AllowTo: []string{Loopback}})
	ctx := context.Background()

	// Connection refused: a port nothing listens on (a listener opened and closed).
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedURL := "http://" + l.Addr().String() + "/"
	_ = l.Close()

	// Timeout: a listener that accepts and never answers.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()

	// TLS: the server's certificate (for example.com and 127.0.0.1) is not trusted, and, trusted,
	// does not name "localhost".
	tlsSrv, _ := countingServer(t, true)
	_, tlsPort, _ := net.SplitHostPort(tlsSrv.Listener.Addr().String())
	plain, _ := countingServer(t, false)
	trusting := loop.Transport(tlsSrv.Client().Transport.(*http.Transport).TLSClientConfig.Clone())

	deadline := func() context.Context {
		c, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		t.Cleanup(cancel)
		return c
	}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"refused by policy", get(ctx, (*Policy)(nil).Client(nil), closedURL), ReasonRefused},
		{"connection refused", get(ctx, loop.Client(nil), closedURL), ReasonUnreachable},
		{"name not resolved", get(ctx, mustPolicy(t, Options{}).Client(nil), "http://no-such-host.invalid/"), ReasonUnreachable},
		{"no answer", get(deadline(), loop.Client(nil), "http://"+silent.Addr().String()+"/"), ReasonTimeout},
		{"untrusted certificate", get(ctx, loop.Client(nil), tlsSrv.URL), ReasonTLS},
		{"wrong certificate name", get(ctx, loop.Client(trusting), "https://localhost:"+tlsPort+"/"), ReasonTLS},
		{"plain HTTP answering https", get(ctx, loop.Client(nil), "https://"+strings.TrimPrefix(plain.URL, "http://")+"/"), ReasonTLS},
		{"cancelled", context.Canceled, ReasonCancelled},
		{"none", nil, ""},
	}
	for _, tt := range tests {
		got := Reason(tt.err)
		if got != tt.want {
			t.Errorf("%s: Reason(%v) = %q, want %q", tt.name, tt.err, got, tt.want)
		}
		if tt.err == nil {
			continue
		}
		s := Summary(tt.err)
		if s.Error() != tt.want || !errors.Is(s, tt.err) {
			t.Errorf("%s: Summary = %q (wraps the error: %v), want %q wrapping it", tt.name, s, errors.Is(s, tt.err), tt.want)
		}
	}
	if !strings.Contains(tests[4].err.Error(), "certificate") || !strings.Contains(tests[5].err.Error(), "localhost") {
		t.Fatalf("the TLS errors do not carry certificate detail (%v; %v): the test proves nothing", tests[4].err, tests[5].err)
	}
	if !strings.Contains(tests[1].err.Error(), l.Addr().String()) {
		t.Fatalf("the dial error does not name the address (%v): the test proves nothing", tests[1].err)
	}
	for _, r := range []string{ReasonRefused, ReasonUnreachable, ReasonTimeout, ReasonTLS, ReasonCancelled} {
		if strings.ContainsAny(r, "0123456789:") {
			t.Errorf("reason %q has digits or a colon", r)
		}
	}
	if Summary(nil) != nil {
		t.Error("Summary(nil) is not nil")
	}
}

// TestNoRedirects: a 302 is returned as is; the redirect target gets nothing.
func TestNoRedirects(t *testing.T) {
	target, reached := countingServer(t, false)
	redirect := httptest.NewServer(http.RedirectHandler(target.URL, http.StatusFound))
	defer redirect.Close()
	loop := mustPolicy(t, Options{AllowTo: []string{Loopback}})
	resp, err := loop.Client(nil).Get(redirect.URL)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusFound || reached.Load() != 0 {
		t.Fatalf("status %d, target reached %d times; want the 302 and no request to the target", resp.StatusCode, reached.Load())
	}
	if got := StatusMessage(resp.StatusCode); got != "HTTP 302 Found (redirects are not followed)" {
		t.Fatalf("StatusMessage = %q", got)
	}
}
