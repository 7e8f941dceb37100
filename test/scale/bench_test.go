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
	bc := newBenchCanary(b, time.Minute, clock.RealClock{}, nil)
	bc.initialize(b)
	// Wait until the cache has caught up with the last writes: three idle ticks in a row send nothing.
	deadline := time.Now().Add(30 * time.Second)
	for quiet := 0; quiet < 3; {
		if time.Now().After(deadline) {
			b.Fatalf("idle ticks still send requests: %v", bc.counter.take())
		}
		_ = bc.counter.take()
		bc.reconcile(b)
		if bc.counter.take().total() == 0 {
			quiet++
		} else {
			quiet = 0
			time.Sleep(50 * time.Millisecond)
		}
	}
	counter, reconcile := bc.counter, func() { bc.reconcile(b) }

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

// benchCanary is one application ("bench") and a Canary Reconciler over a cached client wired as
// manager.New wires it (informer cache of all namespaces, the API reader for the stale check, the
// analysis engine, both routers), with the stand-in playing the Deployment controller. Its
// requests go through counter.
type benchCanary struct {
	ctx     context.Context
	r       *canary.Reconciler
	req     ctrl.Request
	counter *requestCounter
	cache   client.Reader
	standIn *standIn
}

// newBenchCanary creates the application; shape, when set, changes its Canary first.
func newBenchCanary(b *testing.B, interval time.Duration, clk clock.PassiveClock, shape func(*sluicev1.Canary)) *benchCanary {
	testenv.Require(b, env)
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	ns := env.Namespace(b)
	cm, dep, cn := app(ns, "bench", interval)
	if shape != nil {
		shape(cn)
	}
	for _, o := range []client.Object{cm, dep, cn} {
		if err := env.Client.Create(ctx, o); err != nil {
			b.Fatal(err)
		}
	}
	counter := newRequestCounter()
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(counter.wrap)
	informers, err := cache.New(cfg, cache.Options{Scheme: env.Scheme})
	if err != nil {
		b.Fatal(err)
	}
	if err := canary.RegisterIndexes(ctx, informers); err != nil {
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
		Client: c, APIReader: direct, Scheme: env.Scheme, Recorder: discardEvents{}, Clock: clk,
		Analyzer: analysis.NewEngine(c, analysis.Options{DefaultAddress: unreachableMetricsServer}),
		Routers: map[sluicev1.Provider]providers.Router{
			sluicev1.ProviderGatewayAPI: gatewayapi.New(c),
			sluicev1.ProviderIstio:      istio.New(c),
		},
	}
	p, err := startStandIn(env)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(p.stop)
	return &benchCanary{ctx: ctx, r: r, req: ctrl.Request{NamespacedName: client.ObjectKey{Namespace: ns, Name: "bench"}},
		counter: counter, cache: informers, standIn: p}
}

func (bc *benchCanary) reconcile(b *testing.B) ctrl.Result {
	res, err := bc.r.Reconcile(bc.ctx, bc.req)
	if err != nil {
		b.Fatal(err)
	}
	return res
}

// live reads the Canary around the cache (uncounted).
func (bc *benchCanary) live(b *testing.B) *sluicev1.Canary {
	cn := &sluicev1.Canary{}
	if err := env.Client.Get(bc.ctx, bc.req.NamespacedName, cn); err != nil {
		b.Fatal(err)
	}
	return cn
}

// initialize ticks the Canary until it is Initialized and the stand-in has settled.
func (bc *benchCanary) initialize(b *testing.B) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		bc.reconcile(b)
		if cn := bc.live(b); cn.Status.Phase == sluicev1.CanaryPhaseInitialized && bc.standIn.settled(bc.ctx) {
			return
		} else if time.Now().After(deadline) {
			b.Fatalf("canary not Initialized after 30s: %+v", cn.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// cacheShows waits until the cache holds the Canary at resourceVersion rv.
func (bc *benchCanary) cacheShows(b *testing.B, rv string) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		cn := &sluicev1.Canary{}
		if err := bc.cache.Get(bc.ctx, bc.req.NamespacedName, cn); err == nil && cn.ResourceVersion == rv {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("the cache did not show resourceVersion %s within 10s", rv)
		}
		time.Sleep(time.Millisecond)
	}
}
