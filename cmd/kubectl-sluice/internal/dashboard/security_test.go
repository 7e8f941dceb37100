package dashboard

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// newTestServer builds a server on a free loopback port whose "pause" lever only records its
// calls; no request reaches an apiserver (the guard is under test, not the levers).
func newTestServer(t *testing.T, o Options) (*Server, *[]types.NamespacedName) {
	t.Helper()
	var calls []types.NamespacedName
	o.Config = &rest.Config{Host: "http://127.0.0.1:1"}
	o.CanaryLevers = map[string]Lever{"pause": func(_ context.Context, _ client.Client, w io.Writer, k types.NamespacedName) error {
		calls = append(calls, k)
		_, err := io.WriteString(w, "paused\n")
		return err
	}}
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.listener.Close() })
	return s, &calls
}

func (s *Server) port() string { return strconv.Itoa(s.listener.Addr().(*net.TCPAddr).Port) }

// TestGuardRefusesOtherSites pins the dashboard's defences: a Host other than its own address is
// refused (DNS rebinding), a lever request needs the page's Origin, JSON and the per-process
// token, --read-only refuses every lever, a browser's cross-site API request is refused, and no
// answer carries CORS headers.
func TestGuardRefusesOtherSites(t *testing.T) {
	s, calls := newTestServer(t, Options{})
	host := "127.0.0.1:" + s.port()
	lever := `{"lever":"pause","kind":"canary","namespace":"shop","name":"web"}`
	for _, tc := range []struct {
		name, method, path, host, origin, site, ctype, token, body string
		want                                                       int
	}{
		{"the page", "GET", "/", host, "", "", "", "", "", http.StatusOK},
		{"the page by localhost", "GET", "/", "localhost:" + s.port(), "", "", "", "", "", http.StatusOK},
		{"a rebound DNS name", "GET", "/", "attacker.example:" + s.port(), "", "", "", "", "", http.StatusMisdirectedRequest},
		{"another port", "GET", "/", "127.0.0.1:1", "", "", "", "", "", http.StatusMisdirectedRequest},
		{"a cross-site API read", "GET", "/api/overview", host, "", "cross-site", "", "", "", http.StatusForbidden},
		{"a lever without Origin", "POST", "/api/levers", host, "", "", "application/json", s.token, lever, http.StatusForbidden},
		{"a lever from another origin", "POST", "/api/levers", host, "http://attacker.example", "", "application/json", s.token, lever, http.StatusForbidden},
		{"a lever marked cross-site", "POST", "/api/levers", host, "http://" + host, "cross-site", "application/json", s.token, lever, http.StatusForbidden},
		{"a lever as a form", "POST", "/api/levers", host, "http://" + host, "", "application/x-www-form-urlencoded", s.token, lever, http.StatusForbidden},
		{"a lever without the token", "POST", "/api/levers", host, "http://" + host, "", "application/json", "", lever, http.StatusForbidden},
		{"a lever with another token", "POST", "/api/levers", host, "http://" + host, "", "application/json", strings.Repeat("0", 64), lever, http.StatusForbidden},
		{"a GET of the lever endpoint", "GET", "/api/levers", host, "", "", "", "", "", http.StatusMethodNotAllowed},
		{"the page's own lever request", "POST", "/api/levers", host, "http://" + host, "same-origin", "application/json", s.token, lever, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(*calls)
			req := httptest.NewRequest(tc.method, "http://"+tc.host+tc.path, strings.NewReader(tc.body))
			req.Host = tc.host
			for k, v := range map[string]string{"Origin": tc.origin, "Sec-Fetch-Site": tc.site, "Content-Type": tc.ctype, tokenHeader: tc.token} {
				if v != "" {
					req.Header.Set(k, v)
				}
			}
			rec := httptest.NewRecorder()
			s.Handler().ServeHTTP(rec, req)
			if rec.Code != tc.want {
				t.Errorf("status %d, want %d: %s", rec.Code, tc.want, rec.Body.String())
			}
			for k := range rec.Header() {
				if strings.HasPrefix(k, "Access-Control-") {
					t.Errorf("CORS header %s", k)
				}
			}
			if rec.Header().Get("Content-Security-Policy") == "" || rec.Header().Get("X-Frame-Options") != "DENY" {
				t.Errorf("security headers missing: %v", rec.Header())
			}
			pulled := len(*calls) > before
			if pulled != (tc.want == http.StatusOK && tc.method == "POST") {
				t.Errorf("lever pulled: %v", pulled)
			}
		})
	}
	if got := (*calls)[0]; got != (types.NamespacedName{Namespace: "shop", Name: "web"}) {
		t.Errorf("the lever got %v", got)
	}

	t.Run("read-only", func(t *testing.T) {
		ro, calls := newTestServer(t, Options{ReadOnly: true})
		host := "127.0.0.1:" + ro.port()
		req := httptest.NewRequest("POST", "http://"+host+"/api/levers", strings.NewReader(lever))
		req.Header.Set("Origin", "http://"+host)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(tokenHeader, ro.token)
		rec := httptest.NewRecorder()
		ro.Handler().ServeHTTP(rec, req)
		if rec.Code != http.StatusForbidden || len(*calls) != 0 || !strings.Contains(rec.Body.String(), "read-only") {
			t.Errorf("read-only lever: %d %s, %d calls", rec.Code, rec.Body.String(), len(*calls))
		}
		page := httptest.NewRecorder()
		ro.Handler().ServeHTTP(page, httptest.NewRequest("GET", "http://"+host+"/", nil))
		if strings.Contains(page.Body.String(), ro.token) {
			t.Error("the read-only page hands out the token")
		}
	})
}

// TestNonLoopbackAddress warns when the dashboard listens beyond loopback, and then still
// accepts only IP literals as Host (a DNS name could be rebound); an address that is not an IP is
// refused.
func TestNonLoopbackAddress(t *testing.T) {
	var log bytes.Buffer
	s, _ := newTestServer(t, Options{Address: "0.0.0.0", Log: &log})
	if !strings.Contains(log.String(), "WARNING") || !strings.Contains(log.String(), "your credentials") {
		t.Errorf("no warning: %q", log.String())
	}
	for host, want := range map[string]bool{"192.0.2.10:" + s.port(): true, "[2001:db8::1]:" + s.port(): true, "dashboard.example:" + s.port(): false} {
		if got := s.hosts.allows(host); got != want {
			t.Errorf("Host %s allowed: %v, want %v", host, got, want)
		}
	}
	var quiet bytes.Buffer
	newTestServer(t, Options{Log: &quiet})
	if quiet.Len() != 0 {
		t.Errorf("loopback warned: %q", quiet.String())
	}
	if _, err := New(Options{Config: &rest.Config{Host: "http://127.0.0.1:1"}, Address: "localhost"}); err == nil {
		t.Error("a host name as --address was accepted")
	}
}

// TestStreamKeepsOneChangePerObject pins the fan-out's bound: however often an object changes
// before a stream writes, the stream has it once, and streams that do not want it never see it.
func TestStreamKeepsOneChangePerObject(t *testing.T) {
	h := newHub()
	mine := h.subscribe(func(k objKey) bool { return k.key == "shop/web" })
	all := h.subscribe(func(objKey) bool { return true })
	for range 1000 {
		h.notify(objKey{kind: kindCanary, key: "shop/web"})
		h.notify(objKey{kind: kindCanary, key: "shop/api"})
	}
	if got := mine.take(); len(got) != 1 || got[0].key != "shop/web" {
		t.Errorf("the page of shop/web got %v", got)
	}
	if got := all.take(); len(got) != 2 {
		t.Errorf("the overview got %v", got)
	}
	if len(mine.wake) != 1 {
		t.Errorf("wake signals queued: %d", len(mine.wake))
	}
	h.unsubscribe(mine)
	h.notify(objKey{kind: kindCanary, key: "shop/web"})
	if got := mine.take(); len(got) != 0 {
		t.Errorf("an unsubscribed stream got %v", got)
	}
}
