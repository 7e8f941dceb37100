package egress

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// Transport returns an HTTP transport whose every connection passes CheckAddr on the address it
// dials (after DNS resolution, before connect) and that ignores proxy settings. tlsConfig may be
// nil. Pool and timeout settings are those of http.DefaultTransport.
func (p *Policy) Transport(tlsConfig *tls.Config) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	t.TLSClientConfig = tlsConfig
	t.DialContext = p.DialContext
	return t
}

// DialContext dials addr ("host:port") like net.Dialer, refusing with a *RefusedError any resolved
// address CheckAddr refuses, before the connection is attempted. This is where the policy is
// enforced: it sees every address a name resolves to at the moment of the call (so a name rebound
// to another address after CheckURL is judged on what it resolves to now).
func (p *Policy) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	d := &net.Dialer{
		Timeout:   30 * time.Second,
		KeepAlive: 30 * time.Second,
		// Control runs once per resolved address, after the socket exists and before connect(2).
		Control: func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return &RefusedError{Host: host, why: "an unparsable address"}
			}
			return p.CheckAddr(host, ap.Addr())
		},
	}
	return d.DialContext(ctx, network, addr)
}

// Client returns an HTTP client over rt (p.Transport(nil) when nil) that never follows redirects:
// a 3xx answer is returned to the caller as it is, its body unread.
func (p *Policy) Client(rt http.RoundTripper) *http.Client {
	if rt == nil {
		rt = p.Transport(nil)
	}
	return &http.Client{Transport: rt, CheckRedirect: noRedirects}
}

func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// StatusMessage describes an HTTP answer by its code and the standard reason phrase only, e.g.
// "HTTP 500 Internal Server Error": the server's own reason phrase and body may carry what it was
// asked to hide, and they are not for status or events. A redirect says it was not followed.
func StatusMessage(code int) string {
	msg := fmt.Sprintf("HTTP %d", code)
	if text := http.StatusText(code); text != "" {
		msg += " " + text
	}
	if code >= 300 && code <= 399 {
		msg += " (redirects are not followed)"
	}
	return msg
}
