package notify

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/egress"
	"sluice.dev/sluice/tenancy"
)

func TestAccepts(t *testing.T) {
	const (
		info, warn, errs = sluicev1.SeverityInfo, sluicev1.SeverityWarn, sluicev1.SeverityError
	)
	tests := []struct {
		alert, msg sluicev1.AlertSeverity
		want       bool
	}{
		{info, info, true}, {info, warn, true}, {info, errs, true},
		{warn, info, false}, {warn, warn, true}, {warn, errs, true},
		{errs, info, false}, {errs, warn, false}, {errs, errs, true},
		{"", info, true}, {"", errs, true}, // alert default: info
		{warn, "", false}, {info, "", true}, // message default: info
	}
	for _, tt := range tests {
		if got := Accepts(tt.alert, tt.msg); got != tt.want {
			t.Errorf("Accepts(alert %q, msg %q) = %v, want %v", tt.alert, tt.msg, got, tt.want)
		}
	}
}

// TestSeverityRouting sends a message of each severity to three alerts (info, warn, error), each
// with its own receiver, and checks which receivers got it.
func TestSeverityRouting(t *testing.T) {
	sevs := []sluicev1.AlertSeverity{sluicev1.SeverityInfo, sluicev1.SeverityWarn, sluicev1.SeverityError}
	want := map[sluicev1.AlertSeverity][]sluicev1.AlertSeverity{ // message -> receiving alerts
		sluicev1.SeverityInfo:  {sluicev1.SeverityInfo},
		sluicev1.SeverityWarn:  {sluicev1.SeverityInfo, sluicev1.SeverityWarn},
		sluicev1.SeverityError: {sluicev1.SeverityInfo, sluicev1.SeverityWarn, sluicev1.SeverityError},
	}
	for _, msgSev := range sevs {
		t.Run(string(msgSev), func(t *testing.T) {
			rcv := map[sluicev1.AlertSeverity]*receiver{}
			var objs []client.Object
			var alerts []sluicev1.CanaryAlert
			for _, s := range sevs {
				rcv[s] = newReceiver(t, http.StatusNoContent)
				objs = append(objs, provider("hook-"+string(s), sluicev1.AlertProviderGeneric, rcv[s].url())...)
				alerts = append(alerts, alert(string(s), s, "hook-"+string(s)))
			}
			n := newNotifier(t, objs...)
			msg := Message{Subject: podinfo(""), Event: EventWeightAdvanced, Severity: msgSev, Text: "x"}
			if err := n.Send(context.Background(), alertList(alerts...), msg); err != nil {
				t.Fatalf("Send: %v", err)
			}
			for _, s := range sevs {
				wantN := 0
				for _, w := range want[msgSev] {
					if w == s {
						wantN = 1
					}
				}
				if got := len(rcv[s].received()); got != wantN {
					t.Errorf("alert with severity %s got %d messages, want %d", s, got, wantN)
				}
			}
		})
	}
}

func TestProviderConfigErrors(t *testing.T) {
	ok := newReceiver(t, http.StatusOK)
	noKey := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "nokey-url", Namespace: testNS},
		Data:       map[string][]byte{"url": []byte(ok.url())},
	}
	badURL := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "badurl-url", Namespace: testNS},
		Data:       map[string][]byte{SecretKeyAddress: []byte("hooks.example/SECRETTOKEN")},
	}
	var objs []client.Object
	objs = append(objs, provider("secretless", sluicev1.AlertProviderSlack, "")...)
	objs = append(objs, provider("nokey", sluicev1.AlertProviderSlack, "")[0], noKey)
	objs = append(objs, provider("badurl", sluicev1.AlertProviderGeneric, "")[0], badURL)
	objs = append(objs, provider("good", sluicev1.AlertProviderGeneric, ok.url())...)
	n := newNotifier(t, objs...)

	tests := []struct {
		provider string
		want     []string
	}{
		{"secretless", []string{`alert "a"`, "AlertProvider test/secretless", `Secret test/secretless-url (key "address") not found`}},
		{"nokey", []string{`Secret test/nokey-url has no key "address"`}},
		{"badurl", []string{`key "address" of Secret test/badurl-url is not an http(s) URL`}},
		{"missing", []string{"AlertProvider test/missing not found"}},
	}
	for _, tt := range tests {
		t.Run(tt.provider, func(t *testing.T) {
			c := alertList(alert("a", "", tt.provider), alert("b", "", "good"))
			before := len(ok.received())
			err := n.Send(context.Background(), c, rollback())
			if !errors.Is(err, ErrProviderConfig) {
				t.Fatalf("Send error = %v, want ErrProviderConfig", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "SECRETTOKEN") {
				t.Errorf("error %q leaks the Secret's value", err)
			}
			t.Logf("%s: %v", tt.provider, err)
			if got := len(ok.received()) - before; got != 1 {
				t.Errorf("the well-configured provider got %d messages, want 1 (sending continues)", got)
			}
		})
	}
}

// TestProviderInOtherNamespace: a providerRef into another namespace is refused (nothing posted)
// unless that namespace is the controller's or cross-namespace references are allowed.
func TestProviderInOtherNamespace(t *testing.T) {
	rcv := newReceiver(t, http.StatusOK)
	objs := provider("shared", sluicev1.AlertProviderGeneric, rcv.url())
	for _, o := range objs {
		o.SetNamespace("monitoring")
	}
	a := alert("a", "", "shared")
	a.ProviderRef.Namespace = "monitoring"

	refused := newNotifier(t, objs...)
	err := refused.Send(context.Background(), alertList(a), rollback())
	if !errors.Is(err, tenancy.ErrCrossNamespaceRef) || !errors.Is(err, ErrProviderConfig) ||
		!strings.Contains(err.Error(), "AlertProvider monitoring/shared") {
		t.Fatalf("Send with the default policy: %v, want a refusal naming AlertProvider monitoring/shared", err)
	}
	if len(rcv.received()) != 0 {
		t.Fatal("a refused providerRef was posted to")
	}

	for _, refs := range []tenancy.RefPolicy{{ControllerNamespace: "monitoring"}, {AllowCrossNamespace: true}} {
		n := newNotifierWith(t, Options{Refs: refs}, objs...)
		before := len(rcv.received())
		if err := n.Send(context.Background(), alertList(a), rollback()); err != nil {
			t.Fatalf("Send with %+v: %v", refs, err)
		}
		if len(rcv.received()) != before+1 {
			t.Fatalf("with %+v the provider in namespace monitoring got no message", refs)
		}
	}
}

func TestDeliveryErrors(t *testing.T) {
	failing := newReceiver(t, http.StatusInternalServerError)
	ok := newReceiver(t, http.StatusAccepted)
	hang := hangingServer(t)
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL + "/SECRETTOKEN"
	closed.Close()

	var objs []client.Object
	for name, u := range map[string]string{
		"failing": failing.url(), "ok": ok.url(), "hang": hang.URL + "/SECRETTOKEN", "closed": closedURL,
	} {
		for _, typ := range []sluicev1.AlertProviderType{sluicev1.AlertProviderMSTeams, sluicev1.AlertProviderDiscord, sluicev1.AlertProviderGeneric} {
			objs = append(objs, provider(name+"-"+string(typ), typ, u)...)
		}
	}
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(objs...).Build()
	n := New(c, Options{Timeout: 300 * time.Millisecond, Egress: loopbackAllowed})

	tests := []struct {
		provider string
		want     string // "" means success
	}{
		{"failing", "HTTP 500 Internal Server Error"},
		{"ok", ""},
		{"hang", "timed out after 300ms"},
		{"closed", "Post request failed: " + egress.ReasonUnreachable},
	}
	for _, tt := range tests {
		for _, typ := range []string{"msteams", "discord", "generic"} {
			t.Run(tt.provider+"/"+typ, func(t *testing.T) {
				name := tt.provider + "-" + typ
				err := n.Send(context.Background(), alertList(alert("a", "", name)), rollback())
				if tt.want == "" {
					if err != nil {
						t.Fatalf("Send: %v", err)
					}
					return
				}
				if err == nil {
					t.Fatal("Send succeeded")
				}
				if errors.Is(err, ErrProviderConfig) {
					t.Errorf("delivery error %q wraps ErrProviderConfig", err)
				}
				for _, w := range []string{tt.want, typ + " AlertProvider test/" + name} {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				if strings.Contains(err.Error(), "SECRETTOKEN") {
					t.Errorf("error %q leaks the webhook URL", err)
				}
			})
		}
	}
}

// TestSendJoinsErrors: two failing alerts give one error each, joined.
func TestSendJoinsErrors(t *testing.T) {
	failing := newReceiver(t, http.StatusBadGateway)
	var objs []client.Object
	objs = append(objs, provider("one", sluicev1.AlertProviderGeneric, failing.url())...)
	objs = append(objs, provider("two", sluicev1.AlertProviderDiscord, failing.url())...)
	n := newNotifier(t, objs...)
	err := n.Send(context.Background(), alertList(alert("a", "", "one"), alert("b", "", "two")), rollback())
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) || len(joined.Unwrap()) != 2 {
		t.Fatalf("error = %v, want two joined errors", err)
	}
}

func TestNoAlertsNoError(t *testing.T) {
	n := newNotifier(t)
	if err := n.Send(context.Background(), alertList(), rollback()); err != nil {
		t.Fatalf("Send without alerts: %v", err)
	}
}

// decodeOne returns the single body rcv received, decoded into v.
func decodeOne(t *testing.T, rcv *receiver, v any) {
	t.Helper()
	bodies := rcv.received()
	if len(bodies) != 1 {
		t.Fatalf("receiver got %d messages, want 1", len(bodies))
	}
	dec := json.NewDecoder(strings.NewReader(string(bodies[0])))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("decoding %s: %v", bodies[0], err)
	}
}
