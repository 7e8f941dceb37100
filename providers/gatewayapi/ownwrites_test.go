package gatewayapi_test

import (
	"context"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/providers"
	"sluice.dev/sluice/providers/gatewayapi"
)

// frozenRoutes plays an informer cache that stopped delivering HTTPRoute changes: after freeze,
// every HTTPRoute read returns the route as it was then (or not found), while writes reach the
// apiserver. It is the worst case of the lag between a write and the cache showing it.
type frozenRoutes struct {
	client.Client
	mu     sync.Mutex
	frozen map[client.ObjectKey]*gwv1.HTTPRoute // nil: not frozen; a nil value: absent at freeze
}

func (f *frozenRoutes) freeze(t *testing.T, keys ...client.ObjectKey) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.frozen = map[client.ObjectKey]*gwv1.HTTPRoute{}
	for _, key := range keys {
		route := &gwv1.HTTPRoute{}
		if err := f.Client.Get(context.Background(), key, route); err != nil {
			if !apierrors.IsNotFound(err) {
				t.Fatal(err)
			}
			route = nil
		}
		f.frozen[key] = route
	}
}

func (f *frozenRoutes) thaw() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.frozen = nil
}

func (f *frozenRoutes) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if route, ok := obj.(*gwv1.HTTPRoute); ok {
		f.mu.Lock()
		old, frozen := f.frozen[key]
		f.mu.Unlock()
		if frozen && old == nil {
			return apierrors.NewNotFound(gwv1.Resource("httproutes"), key.Name)
		}
		if frozen {
			old.DeepCopyInto(route)
			return nil
		}
	}
	return f.Client.Get(ctx, key, obj, opts...)
}

// routeState is what a reader of the apiserver sees of a Canary's route: its weights and its
// session-affinity cookie.
func routeState(t *testing.T, ctx context.Context, canary *sluicev1.Canary) (providers.Weights, string) {
	t.Helper()
	truth := gatewayapi.New(env.Client)
	w, err := truth.GetRoutes(ctx, canary)
	if err != nil {
		t.Fatal(err)
	}
	cookie, err := truth.GetSessionAffinity(ctx, canary)
	if err != nil {
		t.Fatal(err)
	}
	return w, cookie
}

// TestRouterReadsItsOwnWritesThroughALaggingCache (findings16 #3): a router whose cache has not
// shown its last writes yet still builds every write on them: a session-affinity cookie rule added
// after a weight step survives the next step, and a route created by Reconcile is read back at
// once. For both modes, with the cache frozen for the whole sequence.
func TestRouterReadsItsOwnWritesThroughALaggingCache(t *testing.T) {
	ctx := context.Background()
	cookie := providers.AffinityCookie("sluice-canary", "5d8f9c7b6")
	for _, mode := range []string{"generated", "reference"} {
		t.Run(mode, func(t *testing.T) {
			ns := env.Namespace(t)
			canary, key := canaryInMode(t, ns, mode)
			cache := &frozenRoutes{Client: env.Client}
			cache.freeze(t, key)
			router := gatewayapi.New(cache)

			if err := router.Reconcile(ctx, canary); err != nil {
				t.Fatal(err)
			}
			steps := []func() error{
				func() error { return router.SetRoutes(ctx, canary, providers.CanaryWeight(10)) },
				func() error { return router.SetSessionAffinity(ctx, canary, cookie) },
				func() error { return router.SetRoutes(ctx, canary, providers.CanaryWeight(20)) },
				func() error { return router.SetRoutes(ctx, canary, providers.CanaryWeight(30)) },
			}
			for i, step := range steps {
				if err := step(); err != nil {
					t.Fatalf("step %d through the frozen cache: %v", i, err)
				}
			}
			if w, got := routeState(t, ctx, canary); w != providers.CanaryWeight(30) || got != cookie {
				t.Fatalf("apiserver route: weights %+v, cookie %q; want 70/30 and %q", w, got, cookie)
			}
			if w, err := router.GetRoutes(ctx, canary); err != nil || w != providers.CanaryWeight(30) {
				t.Fatalf("the router reads back %+v, %v; want its own last write 70/30", w, err)
			}
			// The lag is real: the frozen cache itself still shows the route before these writes.
			frozen := gatewayapi.New(&frozenRoutes{Client: env.Client, frozen: cache.frozen})
			if got, err := frozen.GetSessionAffinity(ctx, canary); err == nil && got == cookie {
				t.Fatal("the frozen cache shows the cookie: the test simulates no lag")
			}

			if err := router.SetSessionAffinity(ctx, canary, ""); err != nil {
				t.Fatal(err)
			}
			if err := router.SetRoutes(ctx, canary, providers.CanaryWeight(0)); err != nil {
				t.Fatal(err)
			}
			if w, got := routeState(t, ctx, canary); w != providers.CanaryWeight(0) || got != "" {
				t.Fatalf("after the run: weights %+v, cookie %q; want 100/0 and none", w, got)
			}
		})
	}
}

// TestRouterNeverOverwritesAnEditItHasNotSeen: a change someone else made to the route that the
// cache does not show yet fails the router's write with a Conflict and survives; once the cache
// shows it, the write goes through on top of it. Both modes: the generated route (whose weights
// the user changed) and the user's route (to which they added a rule).
func TestRouterNeverOverwritesAnEditItHasNotSeen(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []string{"generated", "reference"} {
		t.Run(mode, func(t *testing.T) {
			ns := env.Namespace(t)
			canary, key := canaryInMode(t, ns, mode)
			cache := &frozenRoutes{Client: env.Client}
			router := gatewayapi.New(cache)
			if err := router.Reconcile(ctx, canary); err != nil {
				t.Fatal(err)
			}
			if err := router.SetRoutes(ctx, canary, providers.CanaryWeight(10)); err != nil {
				t.Fatal(err)
			}
			cache.freeze(t, key)

			edited := &gwv1.HTTPRoute{}
			if err := env.Client.Get(ctx, key, edited); err != nil {
				t.Fatal(err)
			}
			edit := edited.DeepCopy()
			edit.Spec.Rules = append(edit.Spec.Rules, gwv1.HTTPRouteRule{
				Name:        ptr.To(gwv1.SectionName("user-added")),
				Matches:     []gwv1.HTTPRouteMatch{{Path: &gwv1.HTTPPathMatch{Type: ptr.To(gwv1.PathMatchPathPrefix), Value: ptr.To("/user")}}},
				BackendRefs: []gwv1.HTTPBackendRef{serviceRef("user-svc", 80, nil)},
			})
			if err := env.Client.Patch(ctx, edit, client.MergeFrom(edited)); err != nil {
				t.Fatal(err)
			}

			err := router.SetRoutes(ctx, canary, providers.CanaryWeight(20))
			if !apierrors.IsConflict(err) {
				t.Fatalf("a write built on a route the cache shows from before an edit: %v, want a Conflict", err)
			}
			if !hasRule(getRoute(t, ns, key.Name), "user-added") {
				t.Fatal("the unseen edit was overwritten")
			}
			cache.thaw()
			if err := router.SetRoutes(ctx, canary, providers.CanaryWeight(20)); err != nil {
				t.Fatal(err)
			}
			if w, _ := routeState(t, ctx, canary); w != providers.CanaryWeight(20) {
				t.Fatalf("weights %+v after the retry, want 80/20", w)
			}
			if mode == "reference" && !hasRule(getRoute(t, ns, key.Name), "user-added") {
				t.Fatal("the retry dropped the user's rule")
			}
		})
	}
}

// canaryInMode creates a Canary with a generated route (mode "generated") or one referencing the
// user's three-rule route shop, and returns it with its route's key.
func canaryInMode(t *testing.T, ns, mode string) (*sluicev1.Canary, client.ObjectKey) {
	t.Helper()
	if mode == "generated" {
		return newCanary(t, ns, nil), client.ObjectKey{Namespace: ns, Name: "podinfo"}
	}
	newThreeRuleRoute(t, ns)
	return referenceCanary(t, ns, "shop"), client.ObjectKey{Namespace: ns, Name: "shop"}
}

func hasRule(route *gwv1.HTTPRoute, name string) bool {
	for _, r := range route.Spec.Rules {
		if ptr.Deref(r.Name, "") == gwv1.SectionName(name) {
			return true
		}
	}
	return false
}

// TestTheRouteAsOurWriteLeftItIsToldOurs: the version of the route the apiserver holds after the
// router's write (what an informer then delivers) is told as the router's own write, so the
// route watch may skip its echo; after someone else's edit the route is not. Both modes: the
// generated route (created, then its weights applied) and the user's route (patched).
func TestTheRouteAsOurWriteLeftItIsToldOurs(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []string{"generated", "reference"} {
		t.Run(mode, func(t *testing.T) {
			ns := env.Namespace(t)
			canary, key := canaryInMode(t, ns, mode)
			own := providers.ReadOwnWrites(env.Client)
			router := gatewayapi.New(own)
			if err := router.Reconcile(ctx, canary); err != nil {
				t.Fatal(err)
			}
			for _, weight := range []int32{10, 20} {
				if err := router.SetRoutes(ctx, canary, providers.CanaryWeight(weight)); err != nil {
					t.Fatal(err)
				}
				delivered := &gwv1.HTTPRoute{}
				if err := env.Client.Get(ctx, key, delivered); err != nil {
					t.Fatal(err)
				}
				if !providers.IsOwnWrite(own, delivered) {
					t.Fatalf("weight %d: the route as the router's write left it (rv %s) is not told as its own write", weight, delivered.ResourceVersion)
				}
			}
			edited := &gwv1.HTTPRoute{}
			if err := env.Client.Get(ctx, key, edited); err != nil {
				t.Fatal(err)
			}
			patch := client.MergeFrom(edited.DeepCopy())
			edited.Labels = map[string]string{"edited-by": "someone-else"}
			if err := env.Client.Patch(ctx, edited, patch); err != nil {
				t.Fatal(err)
			}
			if providers.IsOwnWrite(own, edited) {
				t.Fatal("someone else's edit of the route is told as the router's own write")
			}
		})
	}
}
