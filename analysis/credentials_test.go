package analysis

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/egress"
)

// authProxy forwards to Prometheus only requests whose Authorization header is want.
func authProxy(t *testing.T, target, want string, tls bool) *httptest.Server {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != want {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		rp.ServeHTTP(w, r)
	})
	var srv *httptest.Server
	if tls {
		srv = httptest.NewUnstartedServer(h)
		srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes are expected
		srv.StartTLS()
	} else {
		srv = httptest.NewServer(h)
	}
	t.Cleanup(srv.Close)
	return srv
}

func TestCredentials(t *testing.T) {
	p := prom(t)
	bearer := authProxy(t, p.Address(), "Bearer s3cret", false)
	basic := authProxy(t, p.Address(), "Basic YWxpY2U6cEBzcw==", false) // alice:p@ss
	tlsProxy := authProxy(t, p.Address(), "Bearer s3cret", true)

	tpl := func(name, address, secretName string, insecure bool) *sluicev1.MetricTemplate {
		m := metricTemplate(ns, name, `vector(42)`)
		m.Spec.Provider.Address = address
		m.Spec.Provider.InsecureSkipVerify = insecure
		if secretName != "" {
			m.Spec.Provider.SecretRef = &corev1.LocalObjectReference{Name: secretName}
		}
		return m
	}
	objs := []client.Object{
		secret("token", map[string]string{"token": "s3cret\n"}),
		secret("wrong-token", map[string]string{"token": "guess"}),
		secret("basic", map[string]string{"username": "alice", "password": "p@ss"}),
		secret("half", map[string]string{"username": "alice"}),
		secret("empty", nil),
		tpl("bearer", bearer.URL, "token", false),
		tpl("bearer-wrong", bearer.URL, "wrong-token", false),
		tpl("bearer-none", bearer.URL, "", false),
		tpl("basic", basic.URL, "basic", false),
		tpl("half", basic.URL, "half", false),
		tpl("empty", basic.URL, "empty", false),
		tpl("no-secret", basic.URL, "absent", false),
		tpl("tls-insecure", tlsProxy.URL, "token", true),
		tpl("tls-verified", tlsProxy.URL, "token", false),
	}
	e := NewEngine(reader(objs...), Options{Egress: loopbackAllowed})
	for _, tc := range []struct {
		template string
		want     sluicev1.Verdict
		message  string
	}{
		{"bearer", sluicev1.VerdictPass, ""},
		{"bearer-wrong", sluicev1.VerdictError, "401"},
		{"bearer-none", sluicev1.VerdictError, "401"},
		{"basic", sluicev1.VerdictPass, ""},
		{"half", sluicev1.VerdictError, "needs both keys"},
		{"empty", sluicev1.VerdictError, "has neither key"},
		{"no-secret", sluicev1.VerdictError, "Secret test/absent not found"},
		{"tls-insecure", sluicev1.VerdictPass, ""},
		// A fixed reason: the certificate's names and issuer are for the debug log.
		{"tls-verified", sluicev1.VerdictError, "metrics server unreachable: " + tlsProxy.URL + ": " + egress.ReasonTLS},
	} {
		c := newCanary("app95", "", templateMetric("m", tc.template))
		r := analyzeOne(t, e, c)
		if r.Verdict != tc.want || !strings.Contains(r.Message, tc.message) {
			t.Errorf("%s: got %s %q, want %s with %q", tc.template, r.Verdict, r.Message, tc.want, tc.message)
		}
		if tc.want == sluicev1.VerdictPass && r.Value != "42.00" {
			t.Errorf("%s: value %q, want 42.00", tc.template, r.Value)
		}
		if strings.Contains(r.Message, "s3cret") || strings.Contains(r.Message, "p@ss") {
			t.Errorf("%s: message leaks a credential: %q", tc.template, r.Message)
		}
	}

	// Ready uses the template's credentials too, and reports a refusal as unreachable.
	ok := newCanary("app95", "", templateMetric("a", "bearer"), templateMetric("b", "basic"))
	if err := e.Ready(context.Background(), ok); err != nil {
		t.Errorf("Ready with credentials: %v", err)
	}
	bad := newCanary("app95", "", templateMetric("a", "bearer-wrong"))
	if err := e.Ready(context.Background(), bad); !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), bearer.URL) {
		t.Errorf("Ready with a wrong token = %v, want ErrUnreachable naming %s", err, bearer.URL)
	}

	// One client per (address, credentials, TLS setting): bearer, bearer-wrong, bearer-none,
	// basic, tls-insecure, tls-verified.
	if got := e.clients.len(); got != 6 {
		t.Errorf("%d cached clients, want 6", got)
	}
}

func TestCredentialsFromSecret(t *testing.T) {
	for _, tc := range []struct {
		data map[string]string
		want string
		err  bool
	}{
		{map[string]string{"token": "  abc \n"}, "Bearer abc", false},
		{map[string]string{"token": "abc", "username": "u", "password": "p"}, "Bearer abc", false},
		{map[string]string{"username": "u", "password": "p"}, "Basic dTpw", false},
		{map[string]string{"password": "p"}, "", true},
		{map[string]string{"token": " "}, "", true},
	} {
		got, err := credentialsFromSecret(secret("s", tc.data))
		if (err != nil) != tc.err || got.authorization != tc.want {
			t.Errorf("%v: got %q, %v; want %q, error %v", tc.data, got.authorization, err, tc.want, tc.err)
		}
	}
}
