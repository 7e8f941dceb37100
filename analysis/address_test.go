package analysis

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/egress"
)

// TestCredentialsNeverLeaveTheirAddress: a template with credentials but no address (written
// before the admission rule) is an error, not a query with its token to the Canary's
// metricsServer; a redirect from the template's address is not followed (and carries no
// credentials); a metadata address is refused without a connection; an error answer's body is
// not in the result.
func TestCredentialsNeverLeaveTheirAddress(t *testing.T) {
	var mu sync.Mutex
	var seen []string // Authorization headers the Canary's metricsServer received
	canarySrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		http.Error(w, "no", http.StatusTeapot)
	}))
	defer canarySrv.Close()
	redirecting := httptest.NewServer(http.RedirectHandler(canarySrv.URL+"/api/v1/query", http.StatusFound))
	defer redirecting.Close()
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "<html>internal admin token 5c4b</html>", http.StatusBadGateway)
	}))
	defer failing.Close()

	tpl := func(name, address string) *sluicev1.MetricTemplate {
		m := metricTemplate(ns, name, `vector(42)`)
		m.Spec.Provider.Address = address
		m.Spec.Provider.SecretRef = &corev1.LocalObjectReference{Name: "token"}
		return m
	}
	e := NewEngine(reader(secret("token", map[string]string{"token": "s3cret"}),
		tpl("no-address", ""), tpl("redirecting", redirecting.URL), tpl("failing", failing.URL),
		tpl("metadata", "http://169.254.169.254:9090")), Options{Egress: loopbackAllowed})

	for _, tc := range []struct{ template, message string }{
		{"no-address", "has provider.secretRef but no provider.address"},
		{"redirecting", "302"},
		{"failing", "502"},
		{"metadata", "link-local or cloud-metadata"},
	} {
		r := analyzeOne(t, e, newCanary("app95", canarySrv.URL, templateMetric("m", tc.template)))
		if r.Verdict != sluicev1.VerdictError || !strings.Contains(r.Message, tc.message) {
			t.Errorf("%s: got %s %q, want Error with %q", tc.template, r.Verdict, r.Message, tc.message)
		}
		if strings.Contains(r.Message, "5c4b") || strings.Contains(r.Message, "s3cret") {
			t.Errorf("%s: message carries a response body or the token: %q", tc.template, r.Message)
		}
	}
	err := e.Ready(context.Background(), newCanary("app95", canarySrv.URL, templateMetric("m", "metadata")))
	if !errors.Is(err, egress.ErrRefused) || errors.Is(err, ErrUnreachable) {
		t.Errorf("Ready with a metadata address = %v, want egress.ErrRefused (not unreachable: waiting would not help)", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) > 0 {
		t.Fatalf("the Canary's metricsServer received %d requests (Authorization %q): credentials or a redirect reached it", len(seen), seen)
	}
}

// TestAddressPasswordNotInMessages: a template address with user info (credentials written into
// the URL, e.g. by a platform team's shared template in the controller's namespace) is reported
// redacted: the password never reaches a verdict, a readiness error or status a tenant reads.
func TestAddressPasswordNotInMessages(t *testing.T) {
	for _, code := range []int{http.StatusBadGateway, http.StatusBadRequest} {
		failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			_, _ = w.Write([]byte(`{"status":"error","errorType":"bad_data","error":"parse error"}`))
		}))
		address := strings.Replace(failing.URL, "http://", "http://admin:pa55word@", 1)
		m := metricTemplate(ns, "shared", `vector(42)`)
		m.Spec.Provider.Address = address
		e := NewEngine(reader(m), Options{Egress: loopbackAllowed})
		c := newCanary("app96", "", templateMetric("m", "shared"))
		r := analyzeOne(t, e, c)
		if r.Verdict != sluicev1.VerdictError || strings.Contains(r.Message, "pa55word") {
			t.Errorf("HTTP %d: got %s %q, want Error without the password", code, r.Verdict, r.Message)
		}
		if err := e.Ready(context.Background(), c); err == nil || strings.Contains(err.Error(), "pa55word") {
			t.Errorf("HTTP %d: Ready = %v, want an error without the password", code, err)
		}
		failing.Close()
	}
}
