package canary

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"sluice.dev/sluice/analysis"
	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/webhooks"
)

// hangingHook is a webhook receiver that never answers: a request waits until its caller goes
// away or the test ends. It counts the requests it got.
func hangingHook(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var requests atomic.Int32
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(stop) }) // runs first: releases the handlers Close waits for
	return srv, &requests
}

// withoutEvidence answers checks without any verdict (every metric skipped) once none says so.
type withoutEvidence struct {
	*scriptedAnalyzer
	none func(c *sluicev1.Canary) bool
}

func (a withoutEvidence) Analyze(ctx context.Context, c *sluicev1.Canary, now time.Time) (analysis.Check, error) {
	if a.none(c) {
		t := metav1.NewTime(now)
		return analysis.Check{Results: []sluicev1.MetricResult{{Name: "request-success-rate", Verdict: sluicev1.VerdictSkipped,
			Message: "no data", CheckedAt: &t}}}, nil
	}
	return a.scriptedAnalyzer.Analyze(ctx, c, now)
}

// gatedCanary is the seed Canary at a 10s interval with one gate webhook of type gate at url.
func (h *harness) gatedCanary(gate sluicev1.WebhookType, url string) *sluicev1.Canary {
	c := h.canaryFor()
	c.Spec.Analysis.Interval = "10s"
	c.Spec.Analysis.Webhooks = []sluicev1.CanaryWebhook{{Name: "approve", Type: gate, URL: url, Timeout: "5m"}}
	return c
}

// TestHangingGateNeverSuspendsTheRun: a gate webhook that never answers (a real HTTP server that
// hangs, called by the real webhook runner, with the longest timeout admitted) holds only the
// step it gates: the checks go on every interval, failing ones roll the run back at the
// threshold, and the progress deadline ends a run that makes no progress, with or without
// traffic on the canary. The webhook is called once per run: no later round calls it again while
// its call is pending.
func TestHangingGateNeverSuspendsTheRun(t *testing.T) {
	t.Run("threshold while confirm-promotion hangs", func(t *testing.T) {
		h := newHarness(t)
		hook, requests := hangingHook(t)
		runner := webhooks.NewRunner(webhooks.Options{Egress: loopbackAllowed})
		t.Cleanup(runner.Close)
		h.r.Gates = runner
		h.app(1, "1")
		h.create(h.gatedCanary(sluicev1.WebhookConfirmPromotion, hook.URL))
		h.runUntil(sluicev1.CanaryPhaseInitialized, 10)
		h.setImage("2")
		for i := 0; h.last.CanaryWeight < 50; i++ {
			if i > 100 {
				t.Fatalf("weight %d after 100 ticks\n%s", h.last.CanaryWeight, strings.Join(h.log, "\n"))
			}
			h.tick()
		}
		atMax := h.canary().Status.Iterations
		for i := 0; h.canary().Status.Iterations < atMax+3; i++ {
			if i > 60 {
				t.Fatalf("%d checks at weight 50 in 60 ticks while the gate's call hangs, want 3\n%s",
					h.canary().Status.Iterations-atMax, strings.Join(h.log, "\n"))
			}
			h.tick()
		}
		held := h.canary()
		if held.Status.Phase != sluicev1.CanaryPhaseProgressing || held.Status.CanaryWeight != 50 {
			t.Fatalf("phase %s at weight %d, want held at 50 while the gate has not answered", held.Status.Phase, held.Status.CanaryWeight)
		}
		if len(held.Status.Webhooks) != 1 || !held.Status.Webhooks[0].Pending {
			t.Errorf("status.webhooks %+v, want the pending call recorded", held.Status.Webhooks)
		}
		if ready := meta.FindStatusCondition(held.Status.Conditions, sluicev1.ConditionReady); ready == nil ||
			!strings.Contains(ready.Message, "confirm-promotion gate: approve (no answer yet)") {
			t.Errorf("Ready condition %+v does not say the step waits for the webhook's answer", ready)
		}

		h.analyzer.fail = func(int32) bool { return true }
		h.runUntil(sluicev1.CanaryPhaseFailed, 80)
		failed := h.canary()
		if failed.Status.FailedChecks != 5 || !strings.Contains(strings.Join(h.log, "\n"), "failed checks threshold reached (5)") {
			t.Errorf("failed checks %d, want a rollback at the threshold 5\n%s", failed.Status.FailedChecks, strings.Join(h.log, "\n"))
		}
		if w := h.routeWeights(); w.Canary != 0 {
			t.Errorf("route sends %d%% to the rolled-back canary", w.Canary)
		}
		if n := requests.Load(); n != 1 {
			t.Errorf("the hanging webhook got %d requests, want 1 (one call, polled across the rounds)", n)
		}
		for _, a := range failed.Status.Webhooks {
			if a.Pending {
				t.Errorf("the ended run still records a pending call: %+v", a)
			}
		}
	})

	t.Run("deadline while pre-rollout hangs", func(t *testing.T) {
		h := newHarness(t)
		hook, requests := hangingHook(t)
		runner := webhooks.NewRunner(webhooks.Options{Egress: loopbackAllowed})
		t.Cleanup(runner.Close)
		h.r.Gates = runner
		h.app(1, "1")
		c := h.gatedCanary(sluicev1.WebhookPreRollout, hook.URL)
		c.Spec.ProgressDeadlineSeconds = ptr.To[int32](60)
		h.create(c)
		h.runUntil(sluicev1.CanaryPhaseInitialized, 10)
		h.setImage("2")
		h.runUntil(sluicev1.CanaryPhaseFailed, 120)
		failed := h.canary()
		took := failed.Status.LastTransitionTime.Sub(failed.Status.RunStartTime.Time)
		if took < 60*time.Second || took > 62*time.Second {
			t.Errorf("rolled back %s after the run started, want at its 60s deadline", took)
		}
		if failed.Status.FailedChecks != 0 || !strings.Contains(strings.Join(h.log, "\n"), "progress deadline exceeded") {
			t.Errorf("failed checks %d (want none: no answer is no refusal)\n%s", failed.Status.FailedChecks, strings.Join(h.log, "\n"))
		}
		if n := requests.Load(); n != 1 {
			t.Errorf("the hanging webhook got %d requests, want 1", n)
		}
	})

	t.Run("deadline while confirm-promotion hangs", func(t *testing.T) {
		h := newHarness(t)
		hook, _ := hangingHook(t)
		runner := webhooks.NewRunner(webhooks.Options{Egress: loopbackAllowed})
		t.Cleanup(runner.Close)
		h.r.Gates = runner
		h.r.Analyzer = withoutEvidence{scriptedAnalyzer: h.analyzer, none: func(c *sluicev1.Canary) bool { return c.Status.CanaryWeight == 50 }}
		h.app(1, "1")
		c := h.gatedCanary(sluicev1.WebhookConfirmPromotion, hook.URL)
		c.Spec.ProgressDeadlineSeconds = ptr.To[int32](60)
		h.create(c)
		h.runUntil(sluicev1.CanaryPhaseInitialized, 10)
		h.setImage("2")
		h.runUntil(sluicev1.CanaryPhaseFailed, 200)
		log := strings.Join(h.log, "\n")
		if !strings.Contains(log, "progress deadline exceeded (last check NoEvidence") {
			t.Errorf("no deadline rollback naming the checks without evidence\n%s", log)
		}
		if s := h.canary().Status; s.Iterations < 5 {
			t.Errorf("%d checks in the run, want the checks at weight 50 to go on until the deadline", s.Iterations)
		}
	})
}

// TestHangingTenantGatesDoNotSlowAnother: tenant a's eight Canaries each wait at four
// confirm-rollout webhooks that never answer (32 calls, as many as the manager's webhook slots),
// while tenant b's run, whose rollout webhook answers at once, checks every 2s interval, fails
// from weight 20 and rolls back at its threshold as if a did not exist. a holds no more than its
// namespace's share of the slots.
func TestHangingTenantGatesDoNotSlowAnother(t *testing.T) {
	testenv := env
	if testenv == nil {
		t.Skip("needs envtest")
	}
	hanging, hangingRequests := hangingHook(t)
	answering := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	t.Cleanup(answering.Close)
	tenantA, tenantB := env.Namespace(t), env.Namespace(t)
	ctx := t.Context()
	var aApps []string
	for i := range 8 {
		name := fmt.Sprintf("app-%d", i)
		aApps = append(aApps, name)
		createApp(t, tenantA, name)
	}
	createApp(t, tenantB, "app")
	playDeploymentController(t, tenantA)
	playDeploymentController(t, tenantB)
	startManagerConfigured(t, managerConfig{analyzer: &scriptedAnalyzer{fail: func(w int32) bool { return w >= 20 }}, metricsAddr: "0",
		notifyTimeout: 2 * time.Second, namespaces: []string{tenantA, tenantB}})
	for _, name := range aApps {
		c := fastCanary(tenantA)
		c.Name, c.Spec.TargetRef.Name = name, name
		for i := range 4 {
			c.Spec.Analysis.Webhooks = append(c.Spec.Analysis.Webhooks, sluicev1.CanaryWebhook{Name: fmt.Sprintf("approve-%d", i),
				Type: sluicev1.WebhookConfirmRollout, URL: hanging.URL, Timeout: "5m"})
		}
		if err := env.Client.Create(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	b := fastCanary(tenantB)
	b.Name, b.Spec.TargetRef.Name = "app", "app"
	b.Spec.Analysis.Interval = "2s"
	b.Spec.Analysis.Webhooks = []sluicev1.CanaryWebhook{{Name: "smoke", Type: sluicev1.WebhookRollout, URL: answering.URL}}
	if err := env.Client.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	initialized := func(c *sluicev1.Canary) bool { return c.Status.Phase == sluicev1.CanaryPhaseInitialized }
	for _, name := range aApps {
		waitFor(t, tenantA, name, 60*time.Second, name+" Initialized", initialized)
		bump(t, tenantA, name, "app:2")
	}
	waitFor(t, tenantB, "app", 60*time.Second, "tenant b's Canary Initialized", initialized)
	deadline := time.Now().Add(30 * time.Second)
	for hangingRequests.Load() < webhooks.DefaultMaxInFlightPerNamespace {
		if time.Now().After(deadline) {
			t.Fatalf("tenant a's hanging webhooks got %d calls, want its share of %d in flight", hangingRequests.Load(), webhooks.DefaultMaxInFlightPerNamespace)
		}
		time.Sleep(50 * time.Millisecond)
	}

	bump(t, tenantB, "app", "app:2")
	var checks, observed []time.Time
	var seen *metav1.Time
	deadline = time.Now().Add(90 * time.Second)
	for {
		c := &sluicev1.Canary{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: tenantB, Name: "app"}, c); err != nil {
			t.Fatal(err)
		}
		if lc := c.Status.LastCheck; lc != nil && (seen == nil || !lc.Time.Equal(seen)) {
			seen = lc.Time.DeepCopy()
			checks = append(checks, seen.Time)
			observed = append(observed, time.Now())
		}
		if c.Status.Phase == sluicev1.CanaryPhaseFailed {
			if c.Status.FailedChecks != 5 {
				t.Errorf("tenant b rolled back with %d failed checks, want its threshold 5", c.Status.FailedChecks)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("tenant b's run still %s at weight %d with %d failed checks after 90s next to tenant a's hanging gates",
				c.Status.Phase, c.Status.CanaryWeight, c.Status.FailedChecks)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(checks) < 6 {
		t.Fatalf("tenant b took %d checks, want a run through weight 10 and five failed checks", len(checks))
	}
	var gaps, seenGaps []string
	for i := 1; i < len(checks); i++ {
		// The recorded check times keep the 2s cadence when a tick comes late by less than an
		// interval (plan.stepStamp); the times this test saw them bound the real delay. A check
		// queued behind tenant a's calls would come a 5m timeout late.
		gap, seenGap := checks[i].Sub(checks[i-1]), observed[i].Sub(observed[i-1])
		gaps, seenGaps = append(gaps, gap.String()), append(seenGaps, seenGap.Round(time.Millisecond).String())
		if gap > 3*time.Second || seenGap > 4*time.Second {
			t.Errorf("tenant b's check %d came %s after the one before, seen %s later (interval 2s)", i+1, gap, seenGap)
		}
	}
	t.Logf("tenant b's check gaps: %s (seen %s); tenant a's hanging webhooks got %d calls", strings.Join(gaps, " "),
		strings.Join(seenGaps, " "), hangingRequests.Load())
	if n := hangingRequests.Load(); n > webhooks.DefaultMaxInFlightPerNamespace {
		t.Errorf("tenant a's hanging webhooks got %d calls, more than its namespace's share of %d slots", n, webhooks.DefaultMaxInFlightPerNamespace)
	}
}
