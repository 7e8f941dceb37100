package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/manager"
	"sluice.dev/sluice/test/stack"
)

// hpaApp is blueGreenApp with 3 replicas and an HPA (min 2, max 10) referenced by the Canary.
var hpaApp = strings.Replace(strings.Replace(blueGreenApp, "replicas: 2", "replicas: 3", 1),
	"  service: {port: 9898}", "  autoscalerRef: {apiVersion: autoscaling/v2, kind: HorizontalPodAutoscaler, name: podinfo}\n  service: {port: 9898}", 1) + `---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: podinfo, namespace: demo}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: podinfo}
  minReplicas: 2
  maxReplicas: 10
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 80}}
`

// shareSample is one 500 ms sample: which backend the apex selects and both backends' ready pods.
type shareSample struct {
	who                       string
	primaryReady, canaryReady int32
}

// TestHPABlueGreenPrimaryScaledBeforeSwitch: the canary runs 6 replicas (as its HPA scaled it)
// while the primary runs 3. Sampled every 500 ms: the backend holding all the traffic never has
// fewer ready replicas than the most that served it before (so the new primary has at least 6
// ready before the final switch), and a backend with no ready replica never gets traffic.
func TestHPABlueGreenPrimaryScaledBeforeSwitch(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: needs the local cluster")
	}
	ctx := context.Background()
	s, err := stack.Start(ctx, stack.Options{PodReadyDelay: 2 * time.Second, Logf: t.Logf, Services: []stack.Service{
		{Namespace: stack.DemoNamespace, Name: "podinfo", RPS: 40},
		{Namespace: stack.DemoNamespace, Name: "podinfo-canary", RPS: 20},
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
	if err := s.Apply(ctx, []byte(hpaApp)); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitPhase(ctx, stack.DemoNamespace, "podinfo", sluicev1.CanaryPhaseInitialized, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var samples []shareSample
	sampleCtx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		for sampleCtx.Err() == nil {
			svc, p, c := &corev1.Service{}, &appsv1.Deployment{}, &appsv1.Deployment{}
			key := func(n string) client.ObjectKey { return client.ObjectKey{Namespace: stack.DemoNamespace, Name: n} }
			if s.Client.Get(sampleCtx, key("podinfo"), svc) == nil && s.Client.Get(sampleCtx, key("podinfo-primary"), p) == nil &&
				s.Client.Get(sampleCtx, key("podinfo"), c) == nil {
				who := "primary"
				if svc.Spec.Selector["app"] == "podinfo" {
					who = "canary"
				}
				mu.Lock()
				samples = append(samples, shareSample{who, p.Status.ReadyReplicas, c.Status.ReadyReplicas})
				mu.Unlock()
			}
			time.Sleep(500 * time.Millisecond)
		}
	}()

	out, err := s.RunRelease(ctx, stack.Release{Namespace: stack.DemoNamespace, Canary: "podinfo",
		Image: "ghcr.io/stefanprodan/podinfo:6.7.1", Replicas: ptr.To[int32](6), Timeout: 4 * time.Minute})
	t.Log("release:\n" + strings.Join(out.Timeline, "\n"))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	stop()
	mu.Lock()
	defer mu.Unlock()
	if out.Phase != sluicev1.CanaryPhaseSucceeded {
		t.Fatalf("release %s", out.Phase)
	}
	peak, switchedToCanary, switchedBack := int32(0), false, false
	var trace []string
	for i, x := range samples {
		ready := x.primaryReady
		if x.who == "canary" {
			ready = x.canaryReady
			switchedToCanary = true
		} else if switchedToCanary {
			switchedBack = true
		}
		if i == 0 || x != samples[i-1] {
			trace = append(trace, fmt.Sprintf("%s(p=%d c=%d)", x.who, x.primaryReady, x.canaryReady))
		}
		if ready == 0 {
			t.Fatalf("all traffic on the %s with no ready replica: %v", x.who, trace)
		}
		if ready < peak {
			t.Fatalf("all traffic on the %s with %d ready replicas after %d served it: %v", x.who, ready, peak, trace)
		}
		peak = max(peak, ready)
	}
	t.Logf("samples: %v", trace)
	if !switchedToCanary || !switchedBack || peak < 6 {
		t.Fatalf("switched to the canary %v, back %v, peak %d: %v", switchedToCanary, switchedBack, peak, trace)
	}
}
