package e2e

import (
	"context"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/manager"
	"sluice.dev/sluice/test/meshsim"
	"sluice.dev/sluice/test/stack"
)

// blueGreenApp is the demo app without a route (provider kubernetes needs none) and a blue/green
// Canary on provider kubernetes: three analysed iterations at 10 s.
const blueGreenApp = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: podinfo, namespace: demo}
spec:
  replicas: 2
  selector: {matchLabels: {app: podinfo}}
  template:
    metadata:
      labels: {app: podinfo}
      annotations: {sim.sluice.dev/error-rate: "0.001", sim.sluice.dev/latency-ms: "40"}
    spec:
      containers:
      - name: podinfo
        image: ghcr.io/stefanprodan/podinfo:6.7.0
        ports: [{containerPort: 9898, name: http}]
---
apiVersion: v1
kind: Service
metadata: {name: podinfo, namespace: demo}
spec:
  selector: {app: podinfo}
  ports: [{name: http, port: 9898, targetPort: 9898}]
---
apiVersion: sluice.dev/v1alpha1
kind: Canary
metadata: {name: podinfo, namespace: demo}
spec:
  targetRef: {apiVersion: apps/v1, kind: Deployment, name: podinfo}
  provider: kubernetes
  mesh: istio
  progressDeadlineSeconds: 120
  service: {port: 9898}
  analysis:
    interval: 10s
    threshold: 3
    iterations: 3
    metrics:
    - name: request-success-rate
      interval: 15s
      thresholdRange: {min: 99}
`

// apexSampler records, every 500 ms, which pods the apex Service selects and the Canary's phase.
type apexSampler struct {
	mu      sync.Mutex
	samples []string // "primary@Phase" or "canary@Phase", deduplicated
}

func (a *apexSampler) run(ctx context.Context, c client.Client) {
	for ctx.Err() == nil {
		svc, cn := &corev1.Service{}, &sluicev1.Canary{}
		if c.Get(ctx, client.ObjectKey{Namespace: stack.DemoNamespace, Name: "podinfo"}, svc) == nil &&
			c.Get(ctx, client.ObjectKey{Namespace: stack.DemoNamespace, Name: "podinfo"}, cn) == nil {
			who := "other"
			switch {
			case maps.Equal(svc.Spec.Selector, map[string]string{"app": "podinfo-primary"}):
				who = "primary"
			case maps.Equal(svc.Spec.Selector, map[string]string{"app": "podinfo"}):
				who = "canary"
			}
			s := who + "@" + string(cn.Status.Phase)
			a.mu.Lock()
			if len(a.samples) == 0 || a.samples[len(a.samples)-1] != s {
				a.samples = append(a.samples, s)
			}
			a.mu.Unlock()
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func (a *apexSampler) take() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := a.samples
	a.samples = nil
	return out
}

// TestKubernetesProviderBlueGreen runs blue/green with provider kubernetes on the local cluster:
// no route objects; a load test (a second simulated client) reaches the canary through its own
// Service during the iterations, users reach the apex. The canary gets no user traffic until the
// iterations pass; then the apex selects it while the primary is promoted, and the new primary at
// the end. A bad release is rolled back without the apex ever selecting the canary.
func TestKubernetesProviderBlueGreen(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: needs the local cluster")
	}
	ctx := context.Background()
	s, err := stack.Start(ctx, stack.Options{PodReadyDelay: time.Second, Logf: t.Logf, Services: []stack.Service{
		{Namespace: stack.DemoNamespace, Name: "podinfo", RPS: 40},
		{Namespace: stack.DemoNamespace, Name: "podinfo-canary", RPS: 20}, // the load test
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("stopping the stack: %v", err)
		}
	})
	if err := s.StartManager(ctx, manager.Options{SkipNameValidation: true}); err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(ctx, []byte(blueGreenApp)); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitPhase(ctx, stack.DemoNamespace, "podinfo", sluicev1.CanaryPhaseInitialized, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	sampleCtx, stop := context.WithCancel(ctx)
	defer stop()
	sampler := &apexSampler{}
	go sampler.run(sampleCtx, s.Client)

	good, err := s.RunRelease(ctx, stack.Release{Namespace: stack.DemoNamespace, Canary: "podinfo",
		Image: "ghcr.io/stefanprodan/podinfo:6.7.1", Timeout: 4 * time.Minute})
	t.Log("good release:\n" + strings.Join(good.Timeline, "\n"))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	seen := sampler.take()
	t.Logf("apex selected: %v", seen)
	if good.Phase != sluicev1.CanaryPhaseSucceeded || !strings.HasSuffix(good.PrimaryImage, ":6.7.1") {
		t.Fatalf("good release: %s, primary %s", good.Phase, good.PrimaryImage)
	}
	canaryWhile := map[string]bool{}
	for _, x := range seen {
		if who, phase, _ := strings.Cut(x, "@"); who == "canary" {
			canaryWhile[phase] = true
		} else if who != "primary" {
			t.Fatalf("the apex selected neither the primary nor the canary: %v", seen)
		}
	}
	if canaryWhile[string(sluicev1.CanaryPhaseProgressing)] || !canaryWhile[string(sluicev1.CanaryPhasePromoting)] {
		t.Fatalf("the apex must select the canary only after the iterations (Promoting): %v", seen)
	}
	if last := seen[len(seen)-1]; !strings.HasPrefix(last, "primary@") {
		t.Fatalf("after the promotion the apex selects %s", last)
	}

	bad, err := s.RunRelease(ctx, stack.Release{Namespace: stack.DemoNamespace, Canary: "podinfo",
		Image: "ghcr.io/stefanprodan/podinfo:6.7.2", Annotations: map[string]string{meshsim.AnnotationErrorRate: "0.3"},
		Timeout: 4 * time.Minute})
	t.Log("bad release:\n" + strings.Join(bad.Timeline, "\n"))
	if err != nil {
		t.Fatal(err)
	}
	seen = sampler.take()
	t.Logf("apex selected: %v", seen)
	if bad.Phase != sluicev1.CanaryPhaseFailed || !strings.HasSuffix(bad.PrimaryImage, ":6.7.1") {
		t.Fatalf("bad release: %s, primary %s", bad.Phase, bad.PrimaryImage)
	}
	for _, x := range seen {
		if !strings.HasPrefix(x, "primary@") {
			t.Fatalf("the apex selected the canary during a failing run: %v", seen)
		}
	}
}
