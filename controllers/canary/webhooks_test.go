package canary

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/webhooks"
)

// createApp creates a one-replica Deployment name in ns.
func createApp(t *testing.T, ns, name string) {
	t.Helper()
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1"}}}}},
	}
	if err := env.Client.Create(context.Background(), d); err != nil {
		t.Fatal(err)
	}
}

func bump(t *testing.T, ns, name, image string) {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(d.DeepCopy())
	d.Spec.Template.Spec.Containers[0].Image = image
	if err := env.Client.Patch(context.Background(), d, patch); err != nil {
		t.Fatal(err)
	}
}

func canaryWithHook(ns, name, interval string, hook sluicev1.CanaryWebhook) *sluicev1.Canary {
	c := seedCanary(ns)
	c.Name = name
	c.Spec.TargetRef.Name = name
	c.Spec.Analysis.Interval = interval
	c.Spec.Analysis.Metrics = nil
	c.Spec.Analysis.Webhooks = []sluicev1.CanaryWebhook{hook}
	return c
}

// TestSlowWebhooksNeverHoldAWorker runs, on a manager with ONE worker: a Canary whose rollout
// hook answers after 3 s (timeout 10 s), one whose hook never answers (timeout 6 s) and one with a
// fast hook at a 2 s interval. The slow one passes, the hanging one fails its checks with a
// timeout reason, and meanwhile the fast one keeps stepping at its interval.
func TestSlowWebhooksNeverHoldAWorker(t *testing.T) {
	testenv := env
	if testenv == nil {
		t.Skip("needs envtest")
	}
	hooks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/slow":
			time.Sleep(3 * time.Second)
		case "/hang":
			select {
			case <-r.Context().Done():
			case <-time.After(30 * time.Second):
			}
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	// Registered before the manager starts, so it runs after the manager stopped calling hooks;
	// closing the client connections unblocks hanging handlers before Close waits for them.
	t.Cleanup(func() { hooks.CloseClientConnections(); hooks.Close() })

	ns := env.Namespace(t)
	for _, n := range []string{"slow", "hang", "fast"} {
		createApp(t, ns, n)
	}
	playDeploymentController(t, ns)
	startManager(t, ns, "", &scriptedAnalyzer{})
	ctx := context.Background()
	for _, c := range []*sluicev1.Canary{
		canaryWithHook(ns, "slow", "1s", sluicev1.CanaryWebhook{Name: "slow", Type: sluicev1.WebhookRollout, URL: hooks.URL + "/slow", Timeout: "10s"}),
		canaryWithHook(ns, "hang", "1s", sluicev1.CanaryWebhook{Name: "hang", Type: sluicev1.WebhookRollout, URL: hooks.URL + "/hang", Timeout: "6s"}),
		canaryWithHook(ns, "fast", "2s", sluicev1.CanaryWebhook{Name: "fast", Type: sluicev1.WebhookRollout, URL: hooks.URL + "/fast", Timeout: "10s"}),
	} {
		if err := env.Client.Create(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"slow", "hang", "fast"} {
		waitFor(t, ns, n, 30*time.Second, n+" Initialized", func(c *sluicev1.Canary) bool { return c.Status.Phase == sluicev1.CanaryPhaseInitialized })
	}
	bump(t, ns, "hang", "app:2")
	waitFor(t, ns, "hang", 30*time.Second, "hang at weight 10", func(c *sluicev1.Canary) bool { return c.Status.CanaryWeight == 10 })
	bump(t, ns, "slow", "app:2")
	bump(t, ns, "fast", "app:2")

	// Record when the fast canary's weight changes while the hanging hook times out.
	var mu sync.Mutex
	var changes []time.Time
	fastDone := make(chan struct{})
	go func() {
		defer close(fastDone)
		last := int32(-1)
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			c := &sluicev1.Canary{}
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "fast"}, c); err == nil {
				if c.Status.Phase == sluicev1.CanaryPhaseProgressing && c.Status.CanaryWeight != last && c.Status.CanaryWeight > 0 {
					mu.Lock()
					changes = append(changes, time.Now())
					mu.Unlock()
					last = c.Status.CanaryWeight
				}
				if c.Status.Phase == sluicev1.CanaryPhaseSucceeded {
					return
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	<-fastDone
	mu.Lock()
	defer mu.Unlock()
	if len(changes) != 5 {
		t.Fatalf("fast canary made %d steps, want 5 (10..50)", len(changes))
	}
	for i := 1; i < len(changes); i++ {
		// Interval 2 s; a worker held by the 6 s hanging hook would stretch steps to 6 s or more.
		if gap := changes[i].Sub(changes[i-1]); gap > 5*time.Second {
			t.Errorf("fast canary step %d took %s with a hanging hook elsewhere (interval 2s)", i, gap)
		}
	}
	waitFor(t, ns, "slow", 60*time.Second, "slow promoted", func(c *sluicev1.Canary) bool {
		return c.Status.Phase == sluicev1.CanaryPhaseSucceeded && c.Status.FailedChecks == 0
	})
	hang := waitFor(t, ns, "hang", 30*time.Second, "a timed-out check", func(c *sluicev1.Canary) bool { return c.Status.FailedChecks >= 1 })
	found := false
	for _, r := range hang.Status.Analysis {
		if strings.Contains(r.Message, "timed out") {
			found = true
		}
	}
	if !found {
		t.Fatalf("hanging hook's failed check has no timeout reason in status.analysis: %+v", hang.Status.Analysis)
	}
}

// TestEventAndPostRolloutHooksFireOncePerTransition runs a rollout with an event webhook and a
// post-rollout webhook: the event hook receives one call per transition, post-rollout one.
func TestEventAndPostRolloutHooksFireOncePerTransition(t *testing.T) {
	h := newHarness(t)
	var mu sync.Mutex
	calls := map[string]int{}
	hooks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls[r.URL.Path]++
		mu.Unlock()
	}))
	t.Cleanup(hooks.Close)
	runner := webhooks.NewRunner(webhooks.Options{Egress: loopbackAllowed})
	t.Cleanup(runner.Close)
	h.r.Gates = runner
	h.app(1, "1")
	c := seedCanary(h.ns)
	c.Spec.Analysis.Webhooks = []sluicev1.CanaryWebhook{
		{Name: "events", Type: sluicev1.WebhookEvent, URL: hooks.URL + "/event"},
		{Name: "after", Type: sluicev1.WebhookPostRollout, URL: hooks.URL + "/post"},
	}
	h.create(c)
	h.runUntil(sluicev1.CanaryPhaseInitialized, 10)
	h.setImage("2")
	h.runUntil(sluicev1.CanaryPhaseSucceeded, 40)
	// Event hooks receive the lifecycle transitions (the planner's events); PrimaryCreated is a
	// bookkeeping event the controller records itself.
	events := 0
	for _, line := range h.log {
		events += strings.Count(line, "  [") - strings.Count(line, "[PrimaryCreated]")
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		ev, post := calls["/event"], calls["/post"]
		mu.Unlock()
		if ev == events && post == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("event hook called %d times for %d events, post-rollout %d times (want 1)", ev, events, post)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
