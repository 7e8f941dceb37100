package istio

import (
	"context"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/providers"
	"sluice.dev/sluice/test/providertest"
	"sluice.dev/sluice/test/testenv"
)

// cachedClient returns a client that reads from an informer cache of ns, as the manager's does.
func cachedClient(t *testing.T, ns string) client.Client {
	t.Helper()
	c, err := cache.New(env.Config, cache.Options{
		Scheme: env.Scheme, DefaultNamespaces: map[string]cache.Config{ns: {}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = c.Start(ctx) }()
	cl, err := client.New(env.Config, client.Options{Scheme: env.Scheme, Cache: &client.CacheOptions{Reader: c}})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// eventually retries f (a step of the engine's tick loop) until it succeeds or 10 s pass.
func eventually(t *testing.T, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestCachedClient runs both modes through a cache-backed client: reads may lag behind writes,
// and a write computed from a stale copy fails (Conflict) instead of overwriting a newer one, so
// the next tick converges.
func TestCachedClient(t *testing.T) {
	testenv.Require(t, env)
	ctx := t.Context()
	ns := env.Namespace(t)
	orig, _ := createSeed(t, ns)
	r := New(cachedClient(t, ns))

	ref := newCanary(t, ns, referenceVS("user-service"))
	gen := newCanary(t, ns, webCanary)
	eventually(t, "Reconcile generated", func() error { return r.Reconcile(ctx, gen) })
	eventually(t, "Reconcile reference", func() error { return r.Reconcile(ctx, ref) })
	for _, c := range []*sluicev1.Canary{gen, ref} {
		for _, weight := range []int32{10, 40, 0} {
			w := providers.CanaryWeight(weight)
			eventually(t, c.Name+" SetRoutes", func() error {
				if err := r.SetRoutes(ctx, c, w); err != nil {
					return err
				}
				return providertest.VerifyWeight(ctx, r, c, w)
			})
		}
	}
	assertOnlyWeightsChanged(t, orig, getVS(t, ns, "user-service"), providers.CanaryWeight(0))
	eventually(t, "Finalize reference", func() error { return r.Finalize(ctx, ref) })
	protoDiff(t, "spec after Finalize", &getVS(t, ns, "user-service").Spec, &orig.Spec)
}
