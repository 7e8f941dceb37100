package canary

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/notify"
	"sluice.dev/sluice/providers"
	"sluice.dev/sluice/providers/gatewayapi"
	"sluice.dev/sluice/providers/kubernetes"
	"sluice.dev/sluice/test/testenv"
	"sluice.dev/sluice/webhooks"
)

// runningManager is a Sluice manager started in the test process.
type runningManager struct {
	analyzer *scriptedAnalyzer
	// events are the events the controller recorded.
	events *eventLog
	cancel context.CancelFunc
	done   chan error
}

// startManager runs a manager with the canary controller against env, watching namespace ns.
// With leaseID set it uses leader election with that Lease name.
func startManager(t *testing.T, ns, leaseID string, analyzer *scriptedAnalyzer) *runningManager {
	return startManagerWithMetrics(t, ns, leaseID, analyzer, "0")
}

// startManagerWithMetrics is startManager serving /metrics on metricsAddr ("0": off).
func startManagerWithMetrics(t *testing.T, ns, leaseID string, analyzer *scriptedAnalyzer, metricsAddr string) *runningManager {
	t.Helper()
	return startManagerWith(t, ns, leaseID, analyzer, metricsAddr, 2*time.Second)
}

// startManagerWith is startManagerWithMetrics with the notifier's timeout per delivery.
func startManagerWith(t *testing.T, ns, leaseID string, analyzer *scriptedAnalyzer, metricsAddr string, notifyTimeout time.Duration) *runningManager {
	t.Helper()
	return startManagerConfigured(t, managerConfig{leaseNamespace: ns, leaseID: leaseID, analyzer: analyzer,
		metricsAddr: metricsAddr, notifyTimeout: notifyTimeout})
}

// managerConfig configures startManagerConfigured.
type managerConfig struct {
	// leaseNamespace and leaseID: leader election with that Lease when leaseID is set.
	leaseNamespace, leaseID string
	analyzer                *scriptedAnalyzer
	// metricsAddr serves /metrics ("0": off).
	metricsAddr   string
	notifyTimeout time.Duration
	// namespaces, when set, are the only namespaces the manager's cache sees (as --namespace).
	namespaces []string
	// options of the canary controller; Egress defaults to loopbackAllowed.
	options Options
}

// startManagerConfigured runs a manager with the canary controller against env.
func startManagerConfigured(t *testing.T, mc managerConfig) *runningManager {
	t.Helper()
	opts := ctrl.Options{
		Scheme:                 env.Scheme,
		Metrics:                metricsserver.Options{BindAddress: mc.metricsAddr},
		HealthProbeBindAddress: "0",
		// Several managers run in one test process.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	}
	if len(mc.namespaces) > 0 {
		opts.Cache.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range mc.namespaces {
			opts.Cache.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	analyzer, leaseID := mc.analyzer, mc.leaseID
	if leaseID != "" {
		opts.LeaderElection = true
		opts.LeaderElectionID = leaseID
		opts.LeaderElectionNamespace = mc.leaseNamespace
		opts.LeaseDuration = ptrDuration(4 * time.Second)
		opts.RenewDeadline = ptrDuration(3 * time.Second)
		opts.RetryPeriod = ptrDuration(500 * time.Millisecond)
	}
	mgr, err := ctrl.NewManager(env.Config, opts)
	if err != nil {
		t.Fatal(err)
	}
	c := mgr.GetClient()
	if mc.options.Egress == nil {
		mc.options.Egress = loopbackAllowed
	}
	gates := webhooks.NewRunner(webhooks.Options{Egress: mc.options.Egress})
	if err := mgr.Add(gates); err != nil {
		t.Fatal(err)
	}
	events := &eventLog{}
	r := &Reconciler{Client: c, APIReader: mgr.GetAPIReader(), Scheme: mgr.GetScheme(), Recorder: events, Clock: clock.RealClock{},
		Analyzer: analyzer, Routers: map[sluicev1.Provider]providers.Router{sluicev1.ProviderGatewayAPI: gatewayapi.New(c),
			sluicev1.ProviderKubernetes: kubernetes.New(c)},
		Gates: gates, Notifier: notify.New(c, notify.Options{Timeout: mc.notifyTimeout, Egress: mc.options.Egress}), Options: mc.options}
	ctx, cancel := context.WithCancel(context.Background())
	if err := r.SetupWithManager(ctx, mgr, managerWorkers); err != nil {
		t.Fatal(err)
	}
	m := &runningManager{analyzer: analyzer, events: events, cancel: cancel, done: make(chan error, 1)}
	go func() { m.done <- mgr.Start(ctx) }()
	t.Cleanup(m.stop)
	return m
}

func (m *runningManager) stop() {
	if m.cancel == nil {
		return
	}
	m.cancel()
	<-m.done
	m.cancel = nil
}

func ptrDuration(d time.Duration) *time.Duration { return &d }

// managerWorkers is MaxConcurrentReconciles of test managers: one, so a test sees at once if a
// reconcile ever holds its worker (for a slow webhook, say).
const managerWorkers = 1

// playDeploymentController plays the Deployment controller for ns until the test ends.
func playDeploymentController(t *testing.T, ns string, only ...string) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); testenv.PlayDeploymentController(ctx, env.Client, ns, only...) }()
	t.Cleanup(func() { cancel(); <-done })
}

// waitFor polls the Canary until cond holds or timeout passes.
func waitFor(t *testing.T, ns, name string, timeout time.Duration, what string, cond func(*sluicev1.Canary) bool) *sluicev1.Canary {
	t.Helper()
	deadline := time.Now().Add(timeout)
	c := &sluicev1.Canary{}
	for time.Now().Before(deadline) {
		if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, c); err == nil && cond(c) {
			return c
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("timed out after %s waiting for %s; status %+v", timeout, what, c.Status)
	return nil
}

// fastCanary is the seed's Canary with a 1 s interval so a manager test runs in seconds.
func fastCanary(ns string) *sluicev1.Canary {
	c := seedCanary(ns)
	c.Spec.Analysis.Interval = "1s"
	c.Spec.Analysis.Metrics = nil
	return c
}

func TestRestartResumesAtSameStep(t *testing.T) {
	h := newHarness(t)
	h.app(2, "1")
	playDeploymentController(t, h.ns)
	failedOnce := false
	var mu sync.Mutex
	first := startManager(t, h.ns, "", &scriptedAnalyzer{fail: func(w int32) bool {
		mu.Lock()
		defer mu.Unlock()
		if w == 10 && !failedOnce {
			failedOnce = true
			return true
		}
		return false
	}})
	c := fastCanary(h.ns)
	c.Spec.Analysis.Metrics = seedCanary(h.ns).Spec.Analysis.Metrics
	h.create(c)
	waitFor(t, h.ns, "podinfo", 30*time.Second, "Initialized", func(c *sluicev1.Canary) bool {
		return c.Status.Phase == sluicev1.CanaryPhaseInitialized
	})
	h.setImage("2")
	waitFor(t, h.ns, "podinfo", 30*time.Second, "weight 20", func(c *sluicev1.Canary) bool {
		return c.Status.CanaryWeight == 20
	})
	first.stop()
	stopped := h.canary()
	if stopped.Status.CanaryWeight != 20 || stopped.Status.FailedChecks != 1 {
		t.Fatalf("stopped at weight %d with %d failed checks; want 20 and 1", stopped.Status.CanaryWeight, stopped.Status.FailedChecks)
	}
	iterationsAtStop := stopped.Status.Iterations

	second := &scriptedAnalyzer{}
	startManager(t, h.ns, "", second)
	var seen []int32
	final := waitFor(t, h.ns, "podinfo", 30*time.Second, "Succeeded", func(c *sluicev1.Canary) bool {
		if len(seen) == 0 || seen[len(seen)-1] != c.Status.CanaryWeight {
			seen = append(seen, c.Status.CanaryWeight)
		}
		return c.Status.Phase == sluicev1.CanaryPhaseSucceeded
	})
	if len(seen) < 2 || seen[0] != 20 || seen[1] != 30 {
		t.Fatalf("weights after restart %v, want 20 then 30", seen)
	}
	if final.Status.FailedChecks != 1 {
		t.Fatalf("failed checks after restart %d, want the 1 from before", final.Status.FailedChecks)
	}
	// Checks at 20, 30, 40 and 50 ran once each in the new manager: nothing ran twice.
	if got, want := final.Status.Iterations-iterationsAtStop, int32(4); got != want || second.Calls() != 4 {
		t.Fatalf("new manager ran %d checks (%d analyses), want %d", got, second.Calls(), want)
	}
}

func TestLeaderElectionOneManagerActs(t *testing.T) {
	h := newHarness(t)
	h.app(1, "1")
	playDeploymentController(t, h.ns)
	lease := fmt.Sprintf("sluice-test-%d", time.Now().UnixNano()%100000)
	a, b := &scriptedAnalyzer{}, &scriptedAnalyzer{}
	startManager(t, h.ns, lease, a)
	startManager(t, h.ns, lease, b)
	c := fastCanary(h.ns)
	c.Spec.Analysis.Metrics = seedCanary(h.ns).Spec.Analysis.Metrics
	h.create(c)
	waitFor(t, h.ns, "podinfo", 30*time.Second, "Initialized", func(c *sluicev1.Canary) bool {
		return c.Status.Phase == sluicev1.CanaryPhaseInitialized
	})
	h.setImage("2")
	final := waitFor(t, h.ns, "podinfo", 40*time.Second, "Succeeded", func(c *sluicev1.Canary) bool {
		return c.Status.Phase == sluicev1.CanaryPhaseSucceeded
	})
	ca, cb := a.Calls(), b.Calls()
	if (ca == 0) == (cb == 0) {
		t.Fatalf("analyses: manager A %d, manager B %d; want exactly one manager acting", ca, cb)
	}
	if int32(ca+cb) != final.Status.Iterations || final.Status.Iterations != 5 {
		t.Fatalf("%d analyses for %d iterations; want 5 checks (10..50), each once", ca+cb, final.Status.Iterations)
	}
	if !strings.HasPrefix(string(final.Status.Phase), "Succeeded") {
		t.Fatal(final.Status.Phase)
	}
}

func TestMetricsShowCurrentWeight(t *testing.T) {
	h := newHarness(t)
	h.app(1, "1")
	playDeploymentController(t, h.ns)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	startManagerWithMetrics(t, h.ns, "", &scriptedAnalyzer{}, addr)
	c := fastCanary(h.ns)
	c.Spec.Analysis.Interval = "1h" // hold the run at its first step
	h.create(c)
	waitFor(t, h.ns, "podinfo", 30*time.Second, "Initialized", func(c *sluicev1.Canary) bool {
		return c.Status.Phase == sluicev1.CanaryPhaseInitialized
	})
	h.setImage("2")
	waitFor(t, h.ns, "podinfo", 30*time.Second, "weight 10", func(c *sluicev1.Canary) bool { return c.Status.CanaryWeight == 10 })
	want := fmt.Sprintf(`sluice_canary_weight{name="podinfo",namespace=%q} 10`, h.ns)
	phase := fmt.Sprintf(`sluice_canary_phase{name="podinfo",namespace=%q} 3`, h.ns)
	deadline := time.Now().Add(10 * time.Second)
	var body string
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body = string(b)
			if strings.Contains(body, want) && strings.Contains(body, phase) {
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("/metrics lacks %q and %q:\n%s", want, phase, grepLines(body, "sluice_"))
}

func grepLines(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestOutsideEditOfReferencedRouteRestoredAtOnce holds a run at weight 10 (1 h interval) on a
// user's HTTPRoute and edits its weights by hand: the route is watched, so the weights come back
// within seconds, not at the next step.
func TestOutsideEditOfReferencedRouteRestoredAtOnce(t *testing.T) {
	h := newHarness(t)
	h.app(1, "1")
	h.applyYAML(threeRuleRoute)
	playDeploymentController(t, h.ns)
	startManager(t, h.ns, "", &scriptedAnalyzer{})
	c := fastCanary(h.ns)
	c.Spec.Analysis.Interval = "1h"
	c.Spec.Service.RouteRef = &sluicev1.RouteReference{APIVersion: "gateway.networking.k8s.io/v1", Kind: "HTTPRoute", Name: "podinfo"}
	h.create(c)
	waitFor(t, h.ns, "podinfo", 30*time.Second, "Initialized", func(c *sluicev1.Canary) bool {
		return c.Status.Phase == sluicev1.CanaryPhaseInitialized
	})
	h.setImage("2")
	waitFor(t, h.ns, "podinfo", 30*time.Second, "weight 10", func(c *sluicev1.Canary) bool { return c.Status.CanaryWeight == 10 })
	router := gatewayapi.New(env.Client)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if w, err := router.GetRoutes(h.ctx, h.canary()); err == nil && w.Canary == 10 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("route never showed weight 10")
		}
		time.Sleep(100 * time.Millisecond)
	}
	route := &gwv1.HTTPRoute{}
	if err := env.Client.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: "podinfo"}, route); err != nil {
		t.Fatal(err)
	}
	for i := range route.Spec.Rules {
		for j := range route.Spec.Rules[i].BackendRefs {
			b := &route.Spec.Rules[i].BackendRefs[j]
			switch string(b.Name) {
			case "podinfo-primary":
				b.Weight = ptr.To[int32](0)
			case "podinfo-canary":
				b.Weight = ptr.To[int32](100)
			}
		}
	}
	if err := env.Client.Update(h.ctx, route); err != nil {
		t.Fatal(err)
	}
	edited := time.Now()
	for {
		w, err := router.GetRoutes(h.ctx, h.canary())
		if err == nil && w.Canary == 10 && w.Primary == 90 {
			t.Logf("restored after %s", time.Since(edited).Round(10*time.Millisecond))
			return
		}
		if time.Since(edited) > 5*time.Second {
			t.Fatalf("route still %+v (%v) 5 s after an outside edit", w, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
