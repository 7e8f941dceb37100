package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/test/stack"
)

// TestAdoptionNeverLeavesServiceWithoutReadyEndpoints: with pods taking 5 s to become ready, a
// Canary is created for a Service that already serves; its EndpointSlices, sampled every 200 ms
// from before the Canary exists until after it is initialized, never have zero ready endpoints.
func TestAdoptionNeverLeavesServiceWithoutReadyEndpoints(t *testing.T) {
	s := startSafetyStack(t, stackOptions{podReadyDelay: 5 * time.Second, withoutCanary: true}, nil)
	ctx := context.Background()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if n, err := readyEndpoints(ctx, s, stack.DemoNamespace, stack.DemoApp); err == nil && n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the demo Service never had 2 ready endpoints")
		}
		time.Sleep(200 * time.Millisecond)
	}
	sp := sampleEndpoints(t, s, stack.DemoNamespace, stack.DemoApp)
	time.Sleep(time.Second)
	if err := s.ApplyDemoCanary(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitPhase(ctx, stack.DemoNamespace, stack.DemoApp, sluicev1.CanaryPhaseInitialized, 3*time.Minute); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	samples := sp.finish()
	zero := 0
	for _, n := range samples {
		if n == 0 {
			zero++
		}
	}
	t.Logf("%d samples of ready endpoints, 200 ms apart: %v", len(samples), samples)
	if zero > 0 || len(samples) < 25 {
		t.Fatalf("%d of %d samples had zero ready endpoints", zero, len(samples))
	}
	// The takeover is announced, and the Service now selects the primary's pods.
	svc := &corev1.Service{}
	if err := s.Client.Get(ctx, client.ObjectKey{Namespace: stack.DemoNamespace, Name: stack.DemoApp}, svc); err != nil {
		t.Fatal(err)
	}
	if svc.Spec.Selector["app"] != "podinfo-primary" || svc.Annotations["sluice.dev/original-service"] == "" {
		t.Fatalf("apex service after adoption: selector %v, annotations %v", svc.Spec.Selector, svc.Annotations)
	}
	events := &corev1.EventList{}
	if err := s.Client.List(ctx, events, client.InNamespace(stack.DemoNamespace)); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(events.Items, func(e corev1.Event) bool { return e.Reason == sluicev1.ReasonServiceAdopted }) {
		t.Error("no ServiceAdopted event")
	}
}

// setPodsReady marks every pod of Deployment app ready or not (kwok leaves the condition alone
// once a pod runs), as a failing readiness probe would.
func setPodsReady(t *testing.T, s *stack.Stack, app string, ready bool) {
	t.Helper()
	ctx := context.Background()
	pods := &corev1.PodList{}
	if err := s.Client.List(ctx, pods, client.InNamespace(stack.DemoNamespace), client.MatchingLabels{"app": app}); err != nil {
		t.Fatal(err)
	}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		patch := client.MergeFrom(p.DeepCopy())
		for j := range p.Status.Conditions {
			if c := &p.Status.Conditions[j]; c.Type == corev1.PodReady || c.Type == corev1.ContainersReady {
				c.Status, c.LastTransitionTime = status, metav1.Now()
			}
		}
		if err := s.Client.Status().Patch(ctx, p, patch); err != nil {
			t.Fatal(err)
		}
	}
}

// startRelease changes the demo target to image (with annotations) without waiting.
func startRelease(t *testing.T, s *stack.Stack, image string, annotations map[string]string) {
	t.Helper()
	go func() {
		_, _ = s.RunRelease(context.Background(), stack.Release{Namespace: stack.DemoNamespace, Canary: stack.DemoApp,
			Image: image, Annotations: annotations, Timeout: 10 * time.Second})
	}()
}

// TestCanaryLosingReadinessAtWeight30: the canary's pods lose readiness at weight 30 — its weight
// goes to 0 within one tick, and the run rolls back at the progress deadline (120 s), naming the
// cause.
func TestCanaryLosingReadinessAtWeight30(t *testing.T) {
	s := startSafetyStack(t, stackOptions{}, nil)
	startRelease(t, s, "ghcr.io/stefanprodan/podinfo:6.7.1", nil)
	waitCanary(t, s, 2*time.Minute, "weight 30", func(c *sluicev1.Canary) bool { return c.Status.CanaryWeight == 30 })
	setPodsReady(t, s, stack.DemoApp, false)
	lost := time.Now()
	c := waitCanary(t, s, demoInterval, "weight 0 after the canary lost readiness", func(c *sluicev1.Canary) bool {
		return c.Status.CanaryWeight == 0
	})
	t.Logf("weight 0 %s after the canary lost readiness (phase %s)", time.Since(lost).Round(100*time.Millisecond), c.Status.Phase)
	c = waitCanary(t, s, 3*time.Minute, "rollback at the progress deadline", func(c *sluicev1.Canary) bool {
		return c.Status.Phase == sluicev1.CanaryPhaseFailed
	})
	if msg := condition(c, sluicev1.ConditionPromoted).Message; !strings.Contains(msg, "progress deadline exceeded waiting for the canary to become ready") {
		t.Fatalf("rollback reason %q", msg)
	}
}

// TestWindowClosingMidRunKeepsChecking: a progression window closes at weight 30 and the canary
// starts failing: checks keep running and the run rolls back after its failed checks, without
// another step.
func TestWindowClosingMidRunKeepsChecking(t *testing.T) {
	s := startSafetyStack(t, stackOptions{}, nil)
	ctx := context.Background()
	startRelease(t, s, "ghcr.io/stefanprodan/podinfo:6.7.1", nil)
	waitCanary(t, s, 2*time.Minute, "weight 30", func(c *sluicev1.Canary) bool { return c.Status.CanaryWeight == 30 })
	c := demoCanary(t, s)
	patch := client.MergeFrom(c.DeepCopy())
	c.Spec.Windows = []sluicev1.ProgressionWindow{{Schedule: "0 0 1 1 *", Duration: "1m"}} // New Year only
	if err := s.Client.Patch(ctx, c, patch); err != nil {
		t.Fatal(err)
	}
	s.Sims[0].SetErrorRate(stack.DemoApp, 0.3)
	c = waitCanary(t, s, 3*time.Minute, "rollback", func(c *sluicev1.Canary) bool { return c.Status.Phase == sluicev1.CanaryPhaseFailed })
	if c.Status.FailedChecks != 5 || !strings.Contains(condition(c, sluicev1.ConditionPromoted).Message, "failed checks threshold") {
		t.Fatalf("rolled back with %d failed checks: %+v", c.Status.FailedChecks, c.Status.Conditions)
	}
}

// TestPrometheusUnreachable: Prometheus unreachable for two intervals at weight 30 — no advance,
// no failed check, and the run continues to promotion once it answers again. Unreachable past the
// consecutive-error limit — the run rolls back with "metrics unavailable".
func TestPrometheusUnreachable(t *testing.T) {
	var proxy *switchProxy
	s := startSafetyStack(t, stackOptions{}, func(prom string) string {
		proxy = newSwitchProxy(t, prom)
		return proxy.URL()
	})
	startRelease(t, s, "ghcr.io/stefanprodan/podinfo:6.7.1", nil)
	waitCanary(t, s, 2*time.Minute, "weight 30", func(c *sluicev1.Canary) bool { return c.Status.CanaryWeight == 30 })
	proxy.off()
	c := waitCanary(t, s, 3*demoInterval, "two checks that could not be judged", func(c *sluicev1.Canary) bool {
		return c.Status.ConsecutiveErrors >= 2
	})
	if c.Status.CanaryWeight != 30 || c.Status.FailedChecks != 0 {
		t.Fatalf("while Prometheus was unreachable: weight %d, failed checks %d", c.Status.CanaryWeight, c.Status.FailedChecks)
	}
	proxy.on(t)
	c = waitCanary(t, s, 3*time.Minute, "promotion", func(c *sluicev1.Canary) bool { return c.Status.Phase == sluicev1.CanaryPhaseSucceeded })
	if c.Status.FailedChecks != 0 {
		t.Fatalf("promoted with %d failed checks", c.Status.FailedChecks)
	}

	startRelease(t, s, "ghcr.io/stefanprodan/podinfo:6.7.2", nil)
	waitCanary(t, s, 2*time.Minute, "weight 30 of the second release", func(c *sluicev1.Canary) bool {
		return c.Status.CanaryWeight == 30 && c.Status.Phase == sluicev1.CanaryPhaseProgressing
	})
	proxy.off()
	c = waitCanary(t, s, 2*time.Minute, "rollback past the error limit", func(c *sluicev1.Canary) bool {
		return c.Status.Phase == sluicev1.CanaryPhaseFailed
	})
	if msg := condition(c, sluicev1.ConditionPromoted).Message; !strings.Contains(msg, "metrics unavailable for 4 consecutive checks") || c.Status.FailedChecks != 0 {
		t.Fatalf("rollback reason %q, failed checks %d", msg, c.Status.FailedChecks)
	}
}

// TestAPIServerRestartMidRun restarts the local cluster's apiserver at weight 20: the run resumes
// and is promoted, every step taken exactly once.
func TestAPIServerRestartMidRun(t *testing.T) {
	s := startSafetyStack(t, stackOptions{}, nil)
	ctx := context.Background()
	var weights []int32
	done := make(chan struct{})
	go func() {
		defer close(done)
		deadline := time.Now().Add(4 * time.Minute)
		for time.Now().Before(deadline) {
			c := &sluicev1.Canary{}
			if err := s.Client.Get(ctx, client.ObjectKey{Namespace: stack.DemoNamespace, Name: stack.DemoApp}, c); err == nil {
				if w := c.Status.CanaryWeight; c.Status.Phase == sluicev1.CanaryPhaseProgressing && (len(weights) == 0 || weights[len(weights)-1] != w) {
					weights = append(weights, w)
				}
				if c.Status.Phase == sluicev1.CanaryPhaseSucceeded && c.Status.LastPromotedSpec == c.Status.LastAppliedSpec && len(weights) > 0 {
					return
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	startRelease(t, s, "ghcr.io/stefanprodan/podinfo:6.7.1", nil)
	waitCanary(t, s, 2*time.Minute, "weight 20", func(c *sluicev1.Canary) bool { return c.Status.CanaryWeight == 20 })
	down, err := s.Cluster.RestartAPIServer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("apiserver restarted, down for %s", down.Round(100*time.Millisecond))
	<-done
	if want := []int32{0, 10, 20, 30, 40, 50}; !slices.Equal(weights, want) {
		t.Fatalf("weights %v, want each step once: %v", weights, want)
	}
	if c := demoCanary(t, s); c.Status.Phase != sluicev1.CanaryPhaseSucceeded || c.Status.Iterations != 5 {
		t.Fatalf("after the restart: phase %s, %d checks", c.Status.Phase, c.Status.Iterations)
	}
}

// TestGoodReleaseRightAfterABadOne: a bad release rolls back; a good one applied 1 s later is
// judged on its own traffic only — its first check passes (its window does not reach back into
// the bad release's errors) and it is promoted without a failed check.
func TestGoodReleaseRightAfterABadOne(t *testing.T) {
	s := startSafetyStack(t, stackOptions{}, nil)
	ctx := context.Background()
	bad, err := s.RunRelease(ctx, stack.Release{Namespace: stack.DemoNamespace, Canary: stack.DemoApp,
		Image: "ghcr.io/stefanprodan/podinfo:6.7.2", Annotations: map[string]string{"sim.sluice.dev/error-rate": "0.5"},
		Timeout: 4 * time.Minute})
	t.Log("bad release:\n" + strings.Join(bad.Timeline, "\n"))
	if err != nil || bad.Phase != sluicev1.CanaryPhaseFailed {
		t.Fatalf("bad release: %s, %v", bad.Phase, err)
	}
	time.Sleep(time.Second)
	good, err := s.RunRelease(ctx, stack.Release{Namespace: stack.DemoNamespace, Canary: stack.DemoApp,
		Image: "ghcr.io/stefanprodan/podinfo:6.7.3", Annotations: map[string]string{"sim.sluice.dev/error-rate": "0.001"},
		Timeout: 4 * time.Minute})
	t.Log("good release:\n" + strings.Join(good.Timeline, "\n"))
	if err != nil {
		t.Fatal(err)
	}
	c := demoCanary(t, s)
	if good.Phase != sluicev1.CanaryPhaseSucceeded || good.FailedChecks != 0 || !slices.Equal(good.Weights, []int32{10, 20, 30, 40, 50}) {
		t.Fatalf("good release: %s, failed checks %d, weights %v", good.Phase, good.FailedChecks, good.Weights)
	}
	if lc := c.Status.LastCheck; lc == nil || lc.WindowStart == nil || lc.WindowStart.Before(c.Status.RunStartTime) {
		t.Fatalf("last check window %+v reaches before the run (started %v)", lc, c.Status.RunStartTime)
	}
}

func condition(c *sluicev1.Canary, typ string) metav1.Condition {
	for _, cond := range c.Status.Conditions {
		if cond.Type == typ {
			return cond
		}
	}
	return metav1.Condition{}
}
