package dashboard

import (
	"crypto/subtle"
	"mime"
	"net"
	"net/http"
	"strconv"
	"strings"
)

// tokenHeader carries the per-process CSRF token of every lever request.
const tokenHeader = "X-Sluice-Token"

// contentSecurityPolicy allows the page nothing but its own assets and API: no inline script, no
// other origin, no framing.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// hostPolicy says which Host headers reach the dashboard: its own address only, so a page of
// another site cannot reach it through a DNS name rebound to 127.0.0.1.
type hostPolicy struct {
	port  string
	exact map[string]bool
	// anyIP: bound to every interface (0.0.0.0 or ::): any IP literal, never a DNS name.
	anyIP bool
}

func newHostPolicy(ip net.IP, port int) hostPolicy {
	p := hostPolicy{port: strconv.Itoa(port), exact: map[string]bool{ip.String(): true}, anyIP: ip.IsUnspecified()}
	if ip.IsLoopback() {
		for _, h := range []string{"127.0.0.1", "::1", "localhost"} {
			p.exact[h] = true
		}
	}
	return p
}

// allows reports whether a request for host (the Host header, "name:port") is for this server.
func (p hostPolicy) allows(hostport string) bool {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = hostport, "80"
	}
	if port != p.port {
		return false
	}
	if p.exact[strings.ToLower(host)] {
		return true
	}
	return p.anyIP && net.ParseIP(host) != nil
}

// guard refuses what a browser would only send for another site: a Host that is not the
// dashboard's address (DNS rebinding), an API request a browser marks cross-site, and a lever
// request without the page's own Origin, the JSON content type and the CSRF token. It sets the
// security headers of every answer; no answer carries CORS headers.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		if !s.hosts.allows(r.Host) {
			http.Error(w, "refused: the Host "+strconv.Quote(r.Host)+" is not the dashboard's address", http.StatusMisdirectedRequest)
			return
		}
		if site := r.Header.Get("Sec-Fetch-Site"); site == "cross-site" && r.URL.Path != "/" {
			http.Error(w, "refused: a cross-site request", http.StatusForbidden)
			return
		}
		if r.Method == http.MethodPost {
			if why := s.refusePost(r); why != "" {
				writeJSON(w, http.StatusForbidden, map[string]string{"error": "refused: " + why})
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// refusePost says why a POST is refused, or "".
func (s *Server) refusePost(r *http.Request) string {
	if s.opts.ReadOnly {
		return "the dashboard is read-only (--read-only)"
	}
	if origin := r.Header.Get("Origin"); origin != "http://"+r.Host {
		return "the request's Origin " + strconv.Quote(origin) + " is not the dashboard's"
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
		return "the request is " + site
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		return "the request is not JSON"
	}
	if subtle.ConstantTimeCompare([]byte(r.Header.Get(tokenHeader)), []byte(s.token)) != 1 {
		return "the request lacks the page's token (reload the page)"
	}
	return ""
}
