package canary

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slack-go/slack"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/internal/reconcilekit"
	"sluice.dev/sluice/notify"
	"sluice.dev/sluice/test/testenv"
)

// slackReceiver counts the Slack messages it receives, by their fallback text's first words.
type slackReceiver struct {
	mu       sync.Mutex
	messages []string
	srv      *httptest.Server
}

func newSlackReceiver(t *testing.T) *slackReceiver {
	r := &slackReceiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var msg slack.WebhookMessage
		body, _ := io.ReadAll(req.Body)
		if err := json.Unmarshal(body, &msg); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		r.messages = append(r.messages, msg.Text)
		r.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *slackReceiver) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.messages)
}

// addSlackAlert creates a Secret with the receiver's URL, an AlertProvider and points the
// Canary's alerts at it with severity.
func addSlackAlert(t *testing.T, ns string, c *sluicev1.Canary, url string, severity sluicev1.AlertSeverity) {
	t.Helper()
	ctx := context.Background()
	if url != "" {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "slack-url", Namespace: ns}, StringData: map[string]string{"address": url}}
		if err := env.Client.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	ap := &sluicev1.AlertProvider{ObjectMeta: metav1.ObjectMeta{Name: "slack", Namespace: ns},
		Spec: sluicev1.AlertProviderSpec{Type: sluicev1.AlertProviderSlack, Channel: "deploys", SecretRef: corev1.LocalObjectReference{Name: "slack-url"}}}
	if err := env.Client.Create(ctx, ap); err != nil {
		t.Fatal(err)
	}
	c.Spec.Analysis.Alerts = []sluicev1.CanaryAlert{{Name: "team", Severity: severity, ProviderRef: sluicev1.CrossNamespaceObjectReference{Name: "slack"}}}
}

// TestOneSlackMessagePerTransitionAcrossRestart: stepWeights [1, 10, 50] send exactly one message
// per transition (new revision, three steps, promotion), and a controller restart mid-rollout
// sends none twice.
func TestOneSlackMessagePerTransitionAcrossRestart(t *testing.T) {
	h := newHarness(t)
	h.app(1, "1")
	playDeploymentController(t, h.ns)
	rcv := newSlackReceiver(t)
	c := fastCanary(h.ns)
	c.Spec.Analysis.StepWeight, c.Spec.Analysis.MaxWeight = 0, 0
	c.Spec.Analysis.StepWeights = []int32{1, 10, 50}
	c.Spec.Analysis.Interval = "2s"
	addSlackAlert(t, h.ns, c, rcv.srv.URL, sluicev1.SeverityInfo)
	first := startManager(t, h.ns, "", &scriptedAnalyzer{})
	h.create(c)
	waitFor(t, h.ns, "podinfo", 30*time.Second, "Initialized", func(c *sluicev1.Canary) bool {
		return c.Status.Phase == sluicev1.CanaryPhaseInitialized
	})
	h.setImage("2")
	waitFor(t, h.ns, "podinfo", 30*time.Second, "weight 10", func(c *sluicev1.Canary) bool { return c.Status.CanaryWeight == 10 })
	first.stop()
	before := len(rcv.all())
	startManager(t, h.ns, "", &scriptedAnalyzer{})
	waitFor(t, h.ns, "podinfo", 30*time.Second, "Succeeded", func(c *sluicev1.Canary) bool {
		return c.Status.Phase == sluicev1.CanaryPhaseSucceeded
	})
	time.Sleep(3 * time.Second) // a duplicate would arrive within an interval or two
	got := rcv.all()
	if before != 3 || len(got) != 5 {
		t.Fatalf("%d messages before the restart (want 3: new revision, weight 1, weight 10), %d in all (want 5):\n%s",
			before, len(got), strings.Join(got, "\n"))
	}
	for _, want := range []string{"New revision", "weight to 1", "weight to 10", "weight to 50", "Promot"} {
		n := 0
		for _, m := range got {
			if strings.Contains(m, want) {
				n++
			}
		}
		if n < 1 {
			t.Errorf("no message about %q:\n%s", want, strings.Join(got, "\n"))
		}
	}
}

// TestFailuresOutsideAnalysisAlertOnce: a failing pre-rollout webhook and a progress deadline
// each produce exactly one alert of their kind on an error-severity alert.
func TestFailuresOutsideAnalysisAlertOnce(t *testing.T) {
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "load test failed", http.StatusInternalServerError)
	}))
	defer failing.Close()
	for _, tt := range []struct {
		name   string
		mutate func(*sluicev1.Canary)
		want   string
	}{
		{"pre-rollout webhook", func(c *sluicev1.Canary) {
			c.Spec.Analysis.Webhooks = []sluicev1.CanaryWebhook{{Name: "load-test", Type: sluicev1.WebhookPreRollout, URL: failing.URL, Timeout: "2s"}}
			c.Spec.Analysis.Threshold = 3
		}, "Pre-rollout"},
		{"progress deadline", func(c *sluicev1.Canary) {
			c.Spec.ProgressDeadlineSeconds = ptr.To[int32](3)
			c.Spec.Analysis.CanaryReadyThreshold = ptr.To[int32](100)
		}, "No progress"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.app(1, "1")
			rcv := newSlackReceiver(t)
			c := fastCanary(h.ns)
			tt.mutate(c)
			addSlackAlert(t, h.ns, c, rcv.srv.URL, sluicev1.SeverityError)
			if tt.name == "progress deadline" {
				// The canary never becomes ready: play the Deployment controller only for the primary.
				playDeploymentController(t, h.ns, "podinfo-primary")
			} else {
				playDeploymentController(t, h.ns)
			}
			startManager(t, h.ns, "", &scriptedAnalyzer{})
			h.create(c)
			waitFor(t, h.ns, "podinfo", 30*time.Second, "Initialized", func(c *sluicev1.Canary) bool {
				return c.Status.Phase == sluicev1.CanaryPhaseInitialized
			})
			h.setImage("2")
			waitFor(t, h.ns, "podinfo", 60*time.Second, "Failed", func(c *sluicev1.Canary) bool {
				return c.Status.Phase == sluicev1.CanaryPhaseFailed
			})
			time.Sleep(3 * time.Second)
			got := rcv.all()
			n := 0
			for _, m := range got {
				if strings.Contains(m, tt.want) {
					n++
				}
			}
			if n != 1 {
				t.Fatalf("%d alerts mentioning %q, want exactly 1:\n%s", n, tt.want, strings.Join(got, "\n"))
			}
		})
	}
}

// TestSecretlessAlertProviderCondition: an AlertProvider whose Secret is missing surfaces as a
// condition naming the Secret, and the Canary still works.
func TestSecretlessAlertProviderCondition(t *testing.T) {
	h := newHarness(t)
	h.r.Notifier = newTestNotifier()
	h.app(1, "1")
	c := seedCanary(h.ns)
	addSlackAlert(t, h.ns, c, "", sluicev1.SeverityInfo)
	h.create(c)
	h.runUntil(sluicev1.CanaryPhaseInitialized, 10)
	cond := findCondition(h.canary(), sluicev1.ConditionAlertProviderError)
	if cond == nil || cond.Status != metav1.ConditionTrue || !strings.Contains(cond.Message, "slack-url") {
		t.Fatalf("condition %+v does not name the missing Secret slack-url", cond)
	}
}

func newTestNotifier() reconcilekit.Notifier {
	return notify.New(env.Client, notify.Options{Timeout: 2 * time.Second, Egress: loopbackAllowed})
}

// TestSlowAlertProviderNeverHoldsAWorker runs, on a manager with ONE worker, a Canary whose every
// step notifies an alert provider that answers only after 8 s (the notifier's timeout), and a
// second Canary at a 2 s interval. Deliveries run in the background: the second Canary keeps
// stepping at its interval while the slow provider is being called, and every notification
// still reaches it.
func TestSlowAlertProviderNeverHoldsAWorker(t *testing.T) {
	testenv.Require(t, env)
	var mu sync.Mutex
	received := 0
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
			return
		case <-time.After(7 * time.Second):
		}
		mu.Lock()
		received++
		mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(func() { slow.CloseClientConnections(); slow.Close() })
	ns := env.Namespace(t)
	for _, n := range []string{"noisy", "fast"} {
		createApp(t, ns, n)
	}
	playDeploymentController(t, ns)
	startManagerWith(t, ns, "", &scriptedAnalyzer{}, "0", 8*time.Second)
	ctx := context.Background()
	noisy := canaryWithHook(ns, "noisy", "1s", sluicev1.CanaryWebhook{})
	noisy.Spec.Analysis.Webhooks = nil
	addSlackAlert(t, ns, noisy, slow.URL, sluicev1.SeverityInfo)
	fast := canaryWithHook(ns, "fast", "2s", sluicev1.CanaryWebhook{})
	fast.Spec.Analysis.Webhooks = nil
	for _, c := range []*sluicev1.Canary{noisy, fast} {
		if err := env.Client.Create(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"noisy", "fast"} {
		waitFor(t, ns, n, 30*time.Second, n+" Initialized", func(c *sluicev1.Canary) bool { return c.Status.Phase == sluicev1.CanaryPhaseInitialized })
	}
	bump(t, ns, "noisy", "app:2")
	waitFor(t, ns, "noisy", 30*time.Second, "noisy at weight 10", func(c *sluicev1.Canary) bool { return c.Status.CanaryWeight == 10 })
	bump(t, ns, "fast", "app:2")

	var changes []time.Time
	last := int32(-1)
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		c := &sluicev1.Canary{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "fast"}, c); err == nil {
			if c.Status.Phase == sluicev1.CanaryPhaseProgressing && c.Status.CanaryWeight != last && c.Status.CanaryWeight > 0 {
				changes = append(changes, time.Now())
				last = c.Status.CanaryWeight
			}
			if c.Status.Phase == sluicev1.CanaryPhaseSucceeded {
				break
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(changes) != 5 {
		t.Fatalf("fast canary made %d steps, want 5 (10..50)", len(changes))
	}
	for i := 1; i < len(changes); i++ {
		// Interval 2 s; a worker held by an 8 s delivery would stretch a step to 8 s or more.
		if gap := changes[i].Sub(changes[i-1]); gap > 5*time.Second {
			t.Errorf("fast canary step %d took %s while another Canary's alert provider was slow (interval 2s)", i, gap)
		}
	}
	waitFor(t, ns, "noisy", 60*time.Second, "noisy Succeeded", func(c *sluicev1.Canary) bool { return c.Status.Phase == sluicev1.CanaryPhaseSucceeded })
	// New revision, five steps, promotion: every one is delivered, late but whole.
	wantDelivered := 7
	for end := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		mu.Lock()
		n := received
		mu.Unlock()
		if n >= wantDelivered {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("the slow provider received %d notifications, want %d", n, wantDelivered)
		}
	}
}
