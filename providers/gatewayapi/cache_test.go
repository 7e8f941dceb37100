package gatewayapi_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/providers"
	"sluice.dev/sluice/providers/gatewayapi"
	"sluice.dev/sluice/test/testenv"
)

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestCachedClientIdleCostsNothing drives both modes through a manager-style cached client and
// counts the API requests of idle ticks (Reconcile + GetRoutes with nothing to change): none.
func TestCachedClientIdleCostsNothing(t *testing.T) {
	testenv.Require(t, env)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := env.Namespace(t)

	var requests atomic.Int32
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			requests.Add(1)
			return rt.RoundTrip(r)
		})
	})
	informers, err := cache.New(cfg, cache.Options{Scheme: env.Scheme, DefaultNamespaces: map[string]cache.Config{ns: {}}})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = informers.Start(ctx) }()
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme, Cache: &client.CacheOptions{Reader: informers}})
	if err != nil {
		t.Fatal(err)
	}
	router := gatewayapi.New(c)

	newThreeRuleRoute(t, ns)
	canaries := []*sluicev1.Canary{newCanary(t, ns, func(s *sluicev1.CanaryService) { s.Name = "generated" }), referenceCanary(t, ns, "shop")}
	// waitFor polls GetRoutes until the cache shows want (writes reach the cache asynchronously).
	waitFor := func(canary *sluicev1.Canary, want providers.Weights) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			got, err := router.GetRoutes(ctx, canary)
			if err == nil && got == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("GetRoutes = %+v, %v; want %+v", got, err, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	for _, canary := range canaries {
		if err := router.Reconcile(ctx, canary); err != nil {
			t.Fatal(err)
		}
		waitFor(canary, providers.CanaryWeight(0))
		if err := router.SetRoutes(ctx, canary, providers.CanaryWeight(20)); err != nil {
			t.Fatal(err)
		}
		waitFor(canary, providers.CanaryWeight(20))
	}

	requests.Store(0)
	for range 10 {
		for _, canary := range canaries {
			if err := router.Reconcile(ctx, canary); err != nil {
				t.Fatal(err)
			}
			if got, err := router.GetRoutes(ctx, canary); err != nil || got != providers.CanaryWeight(20) {
				t.Fatalf("GetRoutes = %+v, %v", got, err)
			}
		}
	}
	if n := requests.Load(); n != 0 {
		t.Fatalf("idle ticks made %d API requests, want 0", n)
	}
}
