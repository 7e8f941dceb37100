package notify

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/egress"
)

// TestProviderDestinations: an address in the metadata range is refused before anything is
// sent (Check and Send), a redirect is not followed, and a failing answer's body stays out of the
// error (which reaches events and conditions).
func TestProviderDestinations(t *testing.T) {
	var landed atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { landed.Add(1) }))
	defer target.Close()
	redirect := httptest.NewServer(http.RedirectHandler(target.URL, http.StatusTemporaryRedirect))
	defer redirect.Close()
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "backend token 9d8e7f", http.StatusInternalServerError)
	}))
	defer failing.Close()

	objs := provider("metadata", sluicev1.AlertProviderGeneric, "http://169.254.169.254/hook")
	objs = append(objs, provider("redirect", sluicev1.AlertProviderSlack, redirect.URL)...)
	objs = append(objs, provider("failing", sluicev1.AlertProviderGeneric, failing.URL)...)
	n := newNotifier(t, objs...)

	c := alertList(alert("metadata", "", "metadata"))
	if err := n.Check(context.Background(), testNS, c); !errors.Is(err, egress.ErrRefused) || !errors.Is(err, ErrProviderConfig) {
		t.Fatalf("Check of a metadata address: %v, want ErrRefused and ErrProviderConfig", err)
	}
	if err := n.Send(context.Background(), c, rollback()); !errors.Is(err, egress.ErrRefused) {
		t.Fatalf("Send to a metadata address: %v, want ErrRefused", err)
	}

	err := n.Send(context.Background(), alertList(alert("redirect", "", "redirect")), rollback())
	if err == nil || !strings.Contains(err.Error(), "HTTP 307 Temporary Redirect (redirects are not followed)") || landed.Load() != 0 {
		t.Fatalf("Send to a redirecting Slack webhook: %v; redirect target reached %d times", err, landed.Load())
	}

	err = n.Send(context.Background(), alertList(alert("failing", "", "failing")), rollback())
	if err == nil || !strings.Contains(err.Error(), "HTTP 500 Internal Server Error") || strings.Contains(err.Error(), "9d8e7f") {
		t.Fatalf("Send to a failing provider: %v, want the code without the body", err)
	}
}

// TestDefaultPolicyRefusesLoopback: with the default policy (no Egress option), a provider address
// or a spec.proxy on loopback is a configuration error found before anything is sent, and the
// message names neither the address nor its port; the receiver gets nothing.
func TestDefaultPolicyRefusesLoopback(t *testing.T) {
	rcv := newReceiver(t, http.StatusOK)
	host := strings.TrimPrefix(rcv.srv.URL, "http://")
	objs := provider("direct", sluicev1.AlertProviderGeneric, rcv.url())
	proxied := provider("proxied", sluicev1.AlertProviderGeneric, "https://hooks.example.com/services/T/B/x")
	proxied[0].(*sluicev1.AlertProvider).Spec.Proxy = rcv.srv.URL
	objs = append(objs, proxied...)
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(objs...).Build()
	n := New(c, Options{})
	for _, name := range []string{"direct", "proxied"} {
		alerts := alertList(alert("a", "", name))
		err := n.Check(context.Background(), testNS, alerts)
		if !errors.Is(err, egress.ErrRefused) || !errors.Is(err, ErrProviderConfig) || !strings.Contains(err.Error(), "loopback") {
			t.Errorf("%s: Check = %v, want a loopback refusal as a configuration error", name, err)
		}
		if err := n.Send(context.Background(), alerts, rollback()); !errors.Is(err, egress.ErrRefused) {
			t.Errorf("%s: Send = %v, want ErrRefused", name, err)
		} else if msg := err.Error(); strings.Contains(msg, host) || strings.Contains(msg, "127.0.0.1") {
			t.Errorf("%s: Send error %q names the address", name, msg)
		}
	}
	if got := len(rcv.received()); got != 0 {
		t.Fatalf("the receiver got %d requests", got)
	}
}
