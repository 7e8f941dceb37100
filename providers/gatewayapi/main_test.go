package gatewayapi_test

import (
	"context"
	"os"
	"reflect"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/providers"
	"sluice.dev/sluice/providers/gatewayapi"
	"sluice.dev/sluice/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, &env))
}

// plan is a rollout's canary weights: stepWeight 10 up to maxWeight 50, then back to 0.
var plan = []int32{10, 20, 30, 40, 50, 0}

// harness is a Router over a direct client that counts the writes it makes.
type harness struct {
	*gatewayapi.Router
	c      client.WithWatch
	writes atomic.Int32
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	testenv.Require(t, env)
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{c: c}
	count := func() { h.writes.Add(1) }
	h.Router = gatewayapi.New(interceptor.NewClient(c, interceptor.Funcs{
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			count()
			return c.Apply(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			count()
			return c.Patch(ctx, obj, patch, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			count()
			return c.Delete(ctx, obj, opts...)
		},
	}))
	return h
}

// noWrites fails the test when f makes a write.
func (h *harness) noWrites(t *testing.T, what string, f func() error) {
	t.Helper()
	before := h.writes.Load()
	if err := f(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if n := h.writes.Load() - before; n != 0 {
		t.Fatalf("%s made %d writes, want none", what, n)
	}
}

// newCanary creates a Canary for Deployment podinfo (apex Service podinfo unless svc names
// another, port 9898).
func newCanary(t *testing.T, ns string, svc func(*sluicev1.CanaryService)) *sluicev1.Canary {
	t.Helper()
	canary := &sluicev1.Canary{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "podinfo-", Namespace: ns},
		Spec: sluicev1.CanarySpec{
			TargetRef: sluicev1.TargetReference{Kind: "Deployment", Name: "podinfo"},
			Service:   sluicev1.CanaryService{Port: 9898},
		},
	}
	if svc != nil {
		svc(&canary.Spec.Service)
	}
	if err := env.Client.Create(context.Background(), canary); err != nil {
		t.Fatalf("creating Canary: %v", err)
	}
	return canary
}

func getRoute(t *testing.T, ns, name string) *gwv1.HTTPRoute {
	t.Helper()
	route := &gwv1.HTTPRoute{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, route); err != nil {
		t.Fatalf("reading HTTPRoute %s/%s: %v", ns, name, err)
	}
	return route
}

func serviceRef(name string, port int32, weight *int32) gwv1.HTTPBackendRef {
	return gwv1.HTTPBackendRef{BackendRef: gwv1.BackendRef{
		BackendObjectReference: gwv1.BackendObjectReference{Name: gwv1.ObjectName(name), Port: ptr.To(gwv1.PortNumber(port))},
		Weight:                 weight,
	}}
}

// pairOf returns the weights of the primary and canary backendRefs of rule and checks their shape:
// exactly the pair, on port, each with filters.
func pairOf(t *testing.T, rule gwv1.HTTPRouteRule, port int32, filters []gwv1.HTTPRouteFilter) providers.Weights {
	t.Helper()
	if len(rule.BackendRefs) != 2 {
		t.Fatalf("rule has %d backendRefs, want primary and canary: %+v", len(rule.BackendRefs), rule.BackendRefs)
	}
	var w [2]int32
	for i, name := range []string{"podinfo-primary", "podinfo-canary"} {
		ref := rule.BackendRefs[i]
		if string(ref.Name) != name || ptr.Deref(ref.Port, 0) != gwv1.PortNumber(port) || ref.Weight == nil {
			t.Fatalf("backendRef %d = %+v, want %s port %d with a weight", i, ref, name, port)
		}
		if !reflect.DeepEqual(ref.Filters, filters) {
			t.Fatalf("backendRef %s filters = %+v, want %+v", name, ref.Filters, filters)
		}
		w[i] = *ref.Weight
	}
	return providers.Weights{Primary: w[0], Canary: w[1]}
}
