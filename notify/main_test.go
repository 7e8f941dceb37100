package notify

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/egress"
)

// loopbackAllowed is the egress policy of the tests, whose receivers listen on 127.0.0.1: the
// default policy refuses loopback.
var loopbackAllowed = func() *egress.Policy {
	p, err := egress.NewPolicy(egress.Options{AllowTo: []string{egress.Loopback}})
	if err != nil {
		panic(err)
	}
	return p
}()

// receiver is a local webhook endpoint that records every body it receives and answers status.
type receiver struct {
	srv    *httptest.Server
	status int

	mu     sync.Mutex
	bodies [][]byte
}

func newReceiver(t *testing.T, status int) *receiver {
	t.Helper()
	r := &receiver{status: status}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		if req.Method != http.MethodPost || req.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "want a JSON POST", http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		r.bodies = append(r.bodies, b)
		r.mu.Unlock()
		w.WriteHeader(r.status)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// url is the receiver's address with a path shaped like a Slack webhook's secret path.
func (r *receiver) url() string { return r.srv.URL + "/services/T000/B000/SECRETTOKEN" }

func (r *receiver) received() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]byte(nil), r.bodies...)
}

const testNS = "test"

func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := sluicev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// provider returns an AlertProvider in testNS and, when address is not empty, its Secret.
func provider(name string, typ sluicev1.AlertProviderType, address string) []client.Object {
	p := &sluicev1.AlertProvider{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS},
		Spec: sluicev1.AlertProviderSpec{
			Type:      typ,
			SecretRef: corev1.LocalObjectReference{Name: name + "-url"},
		},
	}
	if address == "" {
		return []client.Object{p}
	}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-url", Namespace: testNS},
		Data:       map[string][]byte{SecretKeyAddress: []byte(address + "\n")},
	}
	return []client.Object{p, s}
}

func newNotifier(t *testing.T, objs ...client.Object) *Notifier {
	t.Helper()
	return newNotifierWith(t, Options{}, objs...)
}

// newNotifierWith is New over a fake client holding objs, with loopbackAllowed when opts has no
// policy.
func newNotifierWith(t *testing.T, opts Options, objs ...client.Object) *Notifier {
	t.Helper()
	if opts.Egress == nil {
		opts.Egress = loopbackAllowed
	}
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(objs...).Build()
	return New(c, opts)
}

// alertList is the alerts of a Canary.
func alertList(alerts ...sluicev1.CanaryAlert) []sluicev1.CanaryAlert { return alerts }

// podinfo is the subject of the test messages: Canary podinfo in testNS.
func podinfo(phase string) Subject {
	return Subject{Kind: "Canary", Name: "podinfo", Namespace: testNS, Phase: phase}
}

func alert(name string, sev sluicev1.AlertSeverity, providerName string) sluicev1.CanaryAlert {
	return sluicev1.CanaryAlert{
		Name: name, Severity: sev,
		ProviderRef: sluicev1.CrossNamespaceObjectReference{Name: providerName},
	}
}

// rollback is a typical error message with a failing metric.
func rollback() Message {
	return Message{
		Subject:  podinfo(string(sluicev1.CanaryPhaseFailed)),
		Event:    EventRolledBack,
		Severity: sluicev1.SeverityError,
		Weight:   ptr.To[int32](10),
		Revision: "5d8f9c7b6",
		Text:     "Failed checks reached threshold 5 <canary>",
		Metric:   &FailingMetric{Name: "request-success-rate", Value: "97.5", ThresholdRange: "[99, +Inf]"},
	}
}

// hangingServer never answers: its handler returns when the client goes away or the test ends.
func hangingServer(t *testing.T) *httptest.Server {
	t.Helper()
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Reading the body to the end lets the server notice a client that disconnects.
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(stop) }) // runs before srv.Close
	return srv
}
