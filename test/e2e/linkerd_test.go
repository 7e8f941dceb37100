package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/manager"
	"sluice.dev/sluice/test/meshsim"
	"sluice.dev/sluice/test/stack"
)

// TestLinkerdPath runs the demo as Flagger's Linkerd users do: an HTTPRoute whose parent is the
// apex Service (GAMMA) and mesh: linkerd, so the built-in metrics read the simulated
// linkerd2-proxy's response_total and response_latency_ms. A good release is promoted and a bad
// one rolled back.
func TestLinkerdPath(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: needs the local cluster")
	}
	ctx := context.Background()
	s, err := stack.Start(ctx, stack.Options{PodReadyDelay: time.Second, Logf: t.Logf,
		Services: []stack.Service{{Namespace: stack.DemoNamespace, Name: stack.DemoApp, RPS: 50, Metrics: meshsim.Linkerd}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("stopping the stack: %v", err)
		}
	})
	if err := s.ApplyDemoApp(ctx); err != nil {
		t.Fatal(err)
	}
	c := &sluicev1.Canary{}
	key := client.ObjectKey{Namespace: stack.DemoNamespace, Name: stack.DemoApp}
	if err := s.Client.Get(ctx, key, c); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(c.DeepCopy())
	c.Spec.Mesh = sluicev1.MeshLinkerd // only Linkerd's metrics exist: Istio's built-ins would find no data
	if err := s.Client.Patch(ctx, c, patch); err != nil {
		t.Fatal(err)
	}
	if err := s.StartManager(ctx, manager.Options{SkipNameValidation: true}); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitPhase(ctx, stack.DemoNamespace, stack.DemoApp, sluicev1.CanaryPhaseInitialized, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	good, err := s.RunRelease(ctx, stack.Release{Namespace: stack.DemoNamespace, Canary: stack.DemoApp,
		Image: "ghcr.io/stefanprodan/podinfo:6.7.1", Timeout: 4 * time.Minute})
	t.Log("good release:\n" + strings.Join(good.Timeline, "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if good.Phase != sluicev1.CanaryPhaseSucceeded || good.FinalWeight != 0 || !strings.HasSuffix(good.PrimaryImage, ":6.7.1") {
		t.Fatalf("good release: %s, final weight %d, primary %s", good.Phase, good.FinalWeight, good.PrimaryImage)
	}
	if !strings.Contains(strings.Join(good.Timeline, "\n"), "request-success-rate") {
		t.Fatal("no success-rate verdicts in the good release's timeline")
	}
	bad, err := s.RunRelease(ctx, stack.Release{Namespace: stack.DemoNamespace, Canary: stack.DemoApp,
		Image: "ghcr.io/stefanprodan/podinfo:6.7.2", Annotations: map[string]string{meshsim.AnnotationErrorRate: "0.2"},
		Timeout: 4 * time.Minute})
	t.Log("bad release:\n" + strings.Join(bad.Timeline, "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if bad.Phase != sluicev1.CanaryPhaseFailed || bad.FinalWeight != 0 || !strings.HasSuffix(bad.PrimaryImage, ":6.7.1") {
		t.Fatalf("bad release: %s, final weight %d, primary %s", bad.Phase, bad.FinalWeight, bad.PrimaryImage)
	}
	c = &sluicev1.Canary{}
	if err := s.Client.Get(ctx, key, c); err != nil {
		t.Fatal(err)
	}
	for _, m := range c.Status.Analysis {
		if m.Name == sluicev1.MetricRequestSuccessRate && !strings.Contains(m.Query, "response_total") {
			t.Fatalf("success rate read %q, not Linkerd's response_total", m.Query)
		}
	}
}
