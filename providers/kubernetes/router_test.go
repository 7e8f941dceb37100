package kubernetes_test

import (
	"context"
	"errors"
	"maps"
	"os"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/providers"
	"sluice.dev/sluice/providers/kubernetes"
	"sluice.dev/sluice/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Run(m, &env)) }

var (
	primarySelector = map[string]string{"app": "web-primary"}
	canarySelector  = map[string]string{"app": "web"}
)

// setup creates a blue/green Canary on provider kubernetes and its three Services (the apex one
// selecting the primary, as the controller leaves it after initialization), and returns a Router
// that counts its writes.
func setup(t *testing.T) (*kubernetes.Router, *sluicev1.Canary, *atomic.Int32) {
	t.Helper()
	testenv.Require(t, env)
	ctx := context.Background()
	ns := env.Namespace(t)
	canary := &sluicev1.Canary{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: sluicev1.CanarySpec{
			Provider:  sluicev1.ProviderKubernetes,
			TargetRef: sluicev1.TargetReference{Kind: "Deployment", Name: "web"},
			Service:   sluicev1.CanaryService{Port: 8080},
			Analysis:  sluicev1.CanaryAnalysis{Iterations: 3},
		},
	}
	if err := env.Client.Create(ctx, canary); err != nil {
		t.Fatal(err)
	}
	for name, sel := range map[string]map[string]string{"web": primarySelector, "web-primary": primarySelector, "web-canary": canarySelector} {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: corev1.ServiceSpec{Selector: maps.Clone(sel), Ports: []corev1.ServicePort{{Port: 8080}}}}
		if err := env.Client.Create(ctx, svc); err != nil {
			t.Fatal(err)
		}
	}
	writes := &atomic.Int32{}
	c := interceptor.NewClient(clientWithWatch(t), interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			writes.Add(1)
			return c.Patch(ctx, obj, patch, opts...)
		},
	})
	return kubernetes.New(c), canary, writes
}

func clientWithWatch(t *testing.T) client.WithWatch {
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func apexSelector(t *testing.T, canary *sluicev1.Canary) map[string]string {
	t.Helper()
	svc := &corev1.Service{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: canary.Namespace, Name: "web"}, svc); err != nil {
		t.Fatal(err)
	}
	return svc.Spec.Selector
}

func TestSwitchApexService(t *testing.T) {
	ctx := context.Background()
	r, canary, writes := setup(t)
	if err := r.Reconcile(ctx, canary); err != nil {
		t.Fatal(err)
	}
	if w, err := r.GetRoutes(ctx, canary); err != nil || w != providers.CanaryWeight(0) {
		t.Fatalf("GetRoutes after initialization = %+v, %v; want 100/0", w, err)
	}
	if err := r.SetRoutes(ctx, canary, providers.CanaryWeight(0)); err != nil || writes.Load() != 0 {
		t.Fatalf("SetRoutes(0) on a Service already selecting the primary: %v, %d writes, want none", err, writes.Load())
	}

	if err := r.SetRoutes(ctx, canary, providers.CanaryWeight(100)); err != nil {
		t.Fatal(err)
	}
	if got := apexSelector(t, canary); !maps.Equal(got, canarySelector) {
		t.Fatalf("apex selector after the switch = %v, want the canary's %v", got, canarySelector)
	}
	if w, err := r.GetRoutes(ctx, canary); err != nil || w != providers.CanaryWeight(100) {
		t.Fatalf("GetRoutes after the switch = %+v, %v; want 0/100", w, err)
	}
	if err := r.SetRoutes(ctx, canary, providers.CanaryWeight(0)); err != nil {
		t.Fatal(err)
	}
	if got := apexSelector(t, canary); !maps.Equal(got, primarySelector) {
		t.Fatalf("apex selector after switching back = %v, want the primary's %v", got, primarySelector)
	}
	if n := writes.Load(); n != 2 {
		t.Fatalf("%d writes for two switches", n)
	}

	before := writes.Load()
	for _, c := range []int32{1, 50, 99} {
		if err := r.SetRoutes(ctx, canary, providers.CanaryWeight(c)); !errors.Is(err, kubernetes.ErrInvalidSpec) {
			t.Errorf("SetRoutes(%d) = %v, want ErrInvalidSpec", c, err)
		}
	}
	if err := r.SetABRoutes(ctx, canary, true); !errors.Is(err, kubernetes.ErrInvalidSpec) {
		t.Errorf("SetABRoutes(on) = %v, want ErrInvalidSpec", err)
	}
	if err := r.SetABRoutes(ctx, canary, false); err != nil {
		t.Errorf("SetABRoutes(off) = %v", err)
	}
	if on, err := r.GetABRoutes(ctx, canary); on || err != nil {
		t.Errorf("GetABRoutes = %v, %v", on, err)
	}
	if err := r.SetMirror(ctx, canary, 50); !errors.Is(err, kubernetes.ErrInvalidSpec) {
		t.Errorf("SetMirror(50) = %v, want ErrInvalidSpec", err)
	}
	if err := r.SetSessionAffinity(ctx, canary, providers.AffinityCookie("c", "r")); !errors.Is(err, kubernetes.ErrInvalidSpec) {
		t.Errorf("SetSessionAffinity(on) = %v, want ErrInvalidSpec", err)
	}
	if err := r.SetMirror(ctx, canary, 0); err != nil {
		t.Errorf("SetMirror(0) = %v", err)
	}
	if err := r.SetSessionAffinity(ctx, canary, ""); err != nil {
		t.Errorf("SetSessionAffinity(off) = %v", err)
	}
	if writes.Load() != before {
		t.Fatal("refused calls wrote")
	}
	if got := apexSelector(t, canary); !maps.Equal(got, primarySelector) {
		t.Fatalf("apex selector after refused calls = %v", got)
	}
}

func TestSelectorDriftAndMissingServices(t *testing.T) {
	ctx := context.Background()
	r, canary, _ := setup(t)
	svc := &corev1.Service{}
	key := client.ObjectKey{Namespace: canary.Namespace, Name: "web"}
	if err := env.Client.Get(ctx, key, svc); err != nil {
		t.Fatal(err)
	}
	svc.Spec.Selector = map[string]string{"app": "something-else", "tier": "old"}
	if err := env.Client.Update(ctx, svc); err != nil {
		t.Fatal(err)
	}
	if _, err := r.GetRoutes(ctx, canary); !errors.Is(err, kubernetes.ErrSelectorDrift) {
		t.Fatalf("GetRoutes with a foreign selector = %v, want ErrSelectorDrift", err)
	}
	if err := r.SetRoutes(ctx, canary, providers.CanaryWeight(0)); err != nil {
		t.Fatal(err)
	}
	if got := apexSelector(t, canary); !maps.Equal(got, primarySelector) {
		t.Fatalf("SetRoutes(0) left the selector %v, want the primary's (keys not in it removed)", got)
	}

	if err := env.Client.Delete(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web-canary", Namespace: canary.Namespace}}); err != nil {
		t.Fatal(err)
	}
	for what, err := range map[string]error{
		"Reconcile": r.Reconcile(ctx, canary), "SetRoutes": r.SetRoutes(ctx, canary, providers.CanaryWeight(100)),
	} {
		if !errors.Is(err, providers.ErrRouteNotFound) {
			t.Errorf("%s without the canary Service = %v, want ErrRouteNotFound", what, err)
		}
	}
	if err := r.Finalize(ctx, canary); err != nil {
		t.Errorf("Finalize = %v", err)
	}
}
