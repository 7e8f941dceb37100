package istio

import (
	"context"
	"testing"

	istionetv1 "istio.io/client-go/pkg/apis/networking/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/providers"
	"sluice.dev/sluice/test/testenv"
)

// frozenVirtualServices plays an informer cache that stopped delivering VirtualService changes
// after the snapshot was taken; every other read and every write go to the apiserver.
type frozenVirtualServices struct {
	client.Client
	snapshot map[client.ObjectKey]*istionetv1.VirtualService
}

func (f *frozenVirtualServices) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if vs, ok := obj.(*istionetv1.VirtualService); ok && f.snapshot[key] != nil {
		f.snapshot[key].DeepCopyInto(vs)
		return nil
	}
	return f.Client.Get(ctx, key, obj, opts...)
}

// TestRouterReadsItsOwnWritesThroughALaggingCache: as for the Gateway API router, a weight step,
// session affinity on and two more steps through a cache frozen before them all leave the
// VirtualService with the last weights and the cookie route, each write conditioned on the
// version the previous one produced (a stale read would fail them with a Conflict).
func TestRouterReadsItsOwnWritesThroughALaggingCache(t *testing.T) {
	testenv.Require(t, env)
	ctx := t.Context()
	ns := env.Namespace(t)
	canary := newCanary(t, ns, func(c *sluicev1.Canary) {
		c.Spec.Analysis.SessionAffinity = &sluicev1.SessionAffinity{CookieName: "c", MaxAge: 120}
	})
	if err := New(env.Client).Reconcile(ctx, canary); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKey{Namespace: ns, Name: "user-service"}
	frozen := &frozenVirtualServices{Client: env.Client, snapshot: map[client.ObjectKey]*istionetv1.VirtualService{key: getVS(t, ns, key.Name)}}
	r := New(frozen)
	cookie := providers.AffinityCookie("c", "r1")
	steps := []func() error{
		func() error { return r.SetRoutes(ctx, canary, providers.CanaryWeight(10)) },
		func() error { return r.SetSessionAffinity(ctx, canary, cookie) },
		func() error { return r.SetRoutes(ctx, canary, providers.CanaryWeight(20)) },
		func() error { return r.SetRoutes(ctx, canary, providers.CanaryWeight(30)) },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("step %d through the frozen cache: %v", i, err)
		}
	}
	truth := New(env.Client)
	mustWeights(t, truth, canary, providers.CanaryWeight(30))
	if got, err := truth.GetSessionAffinity(ctx, canary); err != nil || got != cookie {
		t.Fatalf("apiserver VirtualService cookie %q (%v), want %q", got, err, cookie)
	}
	if got, err := New(&frozenVirtualServices{Client: env.Client, snapshot: frozen.snapshot}).GetSessionAffinity(ctx, canary); err != nil || got != "" {
		t.Fatalf("the frozen cache shows cookie %q (%v): the test simulates no lag", got, err)
	}
}
