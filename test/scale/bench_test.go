package scale

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"sluice.dev/sluice/analysis"
	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/canary"
	"sluice.dev/sluice/providers"
	"sluice.dev/sluice/providers/gatewayapi"
	"sluice.dev/sluice/providers/istio"
	"sluice.dev/sluice/test/testenv"
)

// discardEvents is an events.EventRecorder that drops every event.
type discardEvents struct{}

func (discardEvents) Eventf(runtime.Object, runtime.Object, string, string, string, string, ...any) {}

// BenchmarkReconcileIdle measures one Reconcile of an Initialized Canary with nothing to do,
// through a cached client wired as manager.New wires it (informer cache, the API reader for the
// stale check, the analysis engine, both routers). One op is one idle tick; requests/op counts
// the API requests it sends (design target: 0).
func BenchmarkReconcileIdle(b *testing.B) {
	testenv.Require(b, env)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := env.Namespace(b)
	if err := createApp(ctx, env.Client, ns, "bench", time.Minute); err != nil {
		b.Fatal(err)
	}

	counter := newRequestCounter()
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(counter.wrap)
	// All namespaces, like the manager's cache.
	informers, err := cache.New(cfg, cache.Options{Scheme: env.Scheme})
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = informers.Start(ctx) }()
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme, Cache: &client.CacheOptions{Reader: informers}})
	if err != nil {
		b.Fatal(err)
	}
	direct, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		b.Fatal(err)
	}
	r := &canary.Reconciler{
		Client: c, APIReader: direct, Scheme: env.Scheme, Recorder: discardEvents{}, Clock: clock.RealClock{},
		Analyzer: analysis.NewEngine(c, analysis.Options{DefaultAddress: unreachableMetricsServer}),
		Routers: map[sluicev1.Provider]providers.Router{
			sluicev1.ProviderGatewayAPI: gatewayapi.New(c),
			sluicev1.ProviderIstio:      istio.New(c),
		},
	}
	req := ctrl.Request{NamespacedName: client.ObjectKey{Namespace: ns, Name: "bench"}}
	reconcile := func() {
		if _, err := r.Reconcile(ctx, req); err != nil {
			b.Fatal(err)
		}
	}

	// Initialize the Canary, playing the Deployment controller between ticks.
	p, err := startStandIn(env)
	if err != nil {
		b.Fatal(err)
	}
	defer p.stop()
	deadline := time.Now().Add(30 * time.Second)
	for {
		reconcile()
		cn := &sluicev1.Canary{}
		if err := env.Client.Get(ctx, req.NamespacedName, cn); err != nil {
			b.Fatal(err)
		}
		if cn.Status.Phase == sluicev1.CanaryPhaseInitialized && p.settled(ctx) {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("canary not Initialized after 30s: %+v", cn.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Wait until the cache has caught up with the last writes: three idle ticks in a row send nothing.
	for quiet := 0; quiet < 3; {
		if time.Now().After(deadline) {
			b.Fatalf("idle ticks still send requests: %v", counter.take())
		}
		_ = counter.take()
		reconcile()
		if counter.take().total() == 0 {
			quiet++
		} else {
			quiet = 0
			time.Sleep(50 * time.Millisecond)
		}
	}

	b.ReportAllocs()
	b.ResetTimer()
	ops := 0
	for b.Loop() {
		reconcile()
		ops++
	}
	b.StopTimer()
	requests := counter.take()
	b.ReportMetric(float64(requests.total())/float64(ops), "requests/op")
	if requests.total() > 0 {
		b.Logf("idle reconciles sent requests:\n%s", requests.table(float64(ops), "per op"))
	}
}
