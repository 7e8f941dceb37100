package egress

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestCheckURL(t *testing.T) {
	open, err := NewPolicy(nil)
	if err != nil {
		t.Fatal(err)
	}
	listed, err := NewPolicy([]string{"hooks.slack.com", "*.svc.cluster.local", "10.0.0.0/8", "192.168.1.7"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		policy *Policy
		url    string
		refuse string // fragment of the error; "" means allowed
	}{
		{nil, "http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a link-local or cloud-metadata address"},
		{open, "http://169.254.1.1:8080/", "link-local"},
		{open, "http://[fe80::1]/", "link-local"},
		{open, "http://[fd00:ec2::254]/", "cloud-metadata"},
		{open, "http://[::ffff:169.254.169.254]/", "link-local"},
		// An IPv6 zone must not hide a link-local or metadata address (netip.Prefix.Contains is
		// false for any address with a zone).
		{open, "http://[fe80::1%25eth0]/", "link-local"},
		{open, "http://[fe80::a9fe:a9fe%25lo]:8080/", "link-local"},
		{open, "http://[fd00:ec2::254%25eth0]/", "cloud-metadata"},
		{listed, "http://[fe80::1%25eth0]/", "link-local"},
		{open, "http://127.0.0.1:9090/", ""},
		{open, "https://hooks.slack.com/services/T/B/secret", ""},
		{open, "ftp://example.com/", "not an absolute http"},
		{open, "/relative", "not an absolute http"},
		{listed, "https://hooks.slack.com/services/T/B/secret", ""},
		{listed, "http://prometheus.monitoring.svc.cluster.local:9090", ""},
		{listed, "http://10.1.2.3:9090", ""},
		{listed, "http://192.168.1.7/", ""},
		{listed, "http://192.168.1.8/", "192.168.1.8 is not on the allowed destinations"},
		{listed, "http://169.254.169.254/", "link-local"},
		// A name not listed may still resolve into 10.0.0.0/8: decided at dial time.
		{listed, "http://example.com/", ""},
	}
	for _, tt := range tests {
		err := tt.policy.CheckURL(tt.url)
		switch {
		case tt.refuse == "" && err != nil:
			t.Errorf("CheckURL(%q) = %v, want allowed", tt.url, err)
		case tt.refuse != "" && (err == nil || !strings.Contains(err.Error(), tt.refuse)):
			t.Errorf("CheckURL(%q) = %v, want refusal mentioning %q", tt.url, err, tt.refuse)
		case strings.Contains(tt.url, "secret") && err != nil && strings.Contains(err.Error(), "secret"):
			t.Errorf("CheckURL(%q) error repeats the URL's path: %v", tt.url, err)
		}
	}
	namesOnly, _ := NewPolicy([]string{"hooks.slack.com"})
	if err := namesOnly.CheckURL("http://example.com/"); !errors.Is(err, ErrRefused) {
		t.Errorf("names-only allow-list: example.com = %v, want ErrRefused", err)
	}
}

func TestNewPolicyRejectsGarbage(t *testing.T) {
	for _, entry := range []string{"10.0.0.0/33", "*.", "http://x/", "a b"} {
		if _, err := NewPolicy([]string{entry}); err == nil {
			t.Errorf("NewPolicy(%q) accepted", entry)
		}
	}
}

// TestDialRefusesResolvedAddressesBeforeConnecting: with an allow-list of 10.0.0.0/8 only, a
// request to "localhost" resolves to a loopback address, which the dialer's Control hook refuses
// before connect: the local listener accepts no connection. The metadata address is refused by
// the same hook (checked with CheckAddr; the test never dials it).
func TestDialRefusesResolvedAddressesBeforeConnecting(t *testing.T) {
	var accepted atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			accepted.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())

	p, err := NewPolicy([]string{"10.0.0.0/8"})
	if err != nil {
		t.Fatal(err)
	}
	c := p.Client(nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://localhost:"+port+"/", nil)
	resp, err := c.Do(req)
	if err == nil {
		_ = resp.Body.Close()
		t.Fatal("request to localhost passed an allow-list of 10.0.0.0/8")
	}
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "not on the allowed destinations") {
		t.Fatalf("error = %v, want ErrRefused from the dialer", err)
	}
	if n := accepted.Load(); n != 0 {
		t.Fatalf("the listener accepted %d connections: the refusal came after connecting", n)
	}

	// Allowed by name, the same listener is reached.
	byName, _ := NewPolicy([]string{"localhost"})
	req, _ = http.NewRequestWithContext(ctx, http.MethodGet, "http://localhost:"+port+"/", nil)
	if resp, err := byName.Client(nil).Do(req); err != nil {
		t.Fatalf("allow-listed name: %v", err)
	} else {
		_ = resp.Body.Close()
	}
	for _, ip := range []string{"169.254.169.254", "fd00:ec2::254", "fe80::1", "::ffff:169.254.169.254"} {
		if err := byName.CheckAddr("metadata.internal", netip.MustParseAddr(ip)); !errors.Is(err, ErrRefused) {
			t.Errorf("CheckAddr(%s) = %v, want ErrRefused", ip, err)
		}
	}
}

// TestZonedAddressesRefused: the dialer's Control hook sees "[fe80::1%eth0]:80" for a zoned
// link-local destination (a URL host, or a name resolving to one); without an allow-list, the
// zone must not let it through (netip.Prefix.Contains never matches a zoned address). Checked
// with CheckAddr; the test never dials these addresses.
func TestZonedAddressesRefused(t *testing.T) {
	open, _ := NewPolicy(nil)
	for _, ip := range []string{"fe80::1%eth0", "fe80::a9fe:a9fe%lo", "fd00:ec2::254%eth0"} {
		if err := open.CheckAddr("metadata.internal", netip.MustParseAddr(ip)); !errors.Is(err, ErrRefused) {
			t.Errorf("CheckAddr(%s) = %v, want ErrRefused", ip, err)
		}
	}
	// An allow-listed zoned address is allowed like the same address without its zone.
	listed, _ := NewPolicy([]string{"fd12::/16"})
	if err := listed.CheckAddr("", netip.MustParseAddr("fd12::1%eth0")); err != nil {
		t.Errorf("allow-listed fd12::1%%eth0 = %v, want allowed", err)
	}
}

// TestNoRedirects: a 302 is returned as is; the redirect target gets nothing.
func TestNoRedirects(t *testing.T) {
	var reached atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached.Add(1) }))
	defer target.Close()
	redirect := httptest.NewServer(http.RedirectHandler(target.URL, http.StatusFound))
	defer redirect.Close()
	resp, err := (*Policy)(nil).Client(nil).Get(redirect.URL)
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
