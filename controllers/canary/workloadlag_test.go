package canary

import (
	"context"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// laggingWorkloads is a client whose Deployments lag one tick behind the controller's own writes
// (lagCache), while every other read is current: the Canary's informer has caught up, the
// Deployments' has not. It records the Deployment patches sent.
type laggingWorkloads struct {
	client.Client
	*lagCache[*appsv1.Deployment]
	mu      sync.Mutex
	patches []string // "name: patch body"
}

func newLaggingWorkloads(c client.Client) *laggingWorkloads {
	return &laggingWorkloads{Client: c, lagCache: newLagCache(func() *appsv1.Deployment { return &appsv1.Deployment{} })}
}

func (l *laggingWorkloads) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	d, ok := obj.(*appsv1.Deployment)
	if !ok {
		return l.Client.Patch(ctx, obj, patch, opts...)
	}
	l.beforeWrite(ctx, l.Client, client.ObjectKeyFromObject(d))
	body, _ := patch.Data(obj)
	l.mu.Lock()
	l.patches = append(l.patches, d.Name+": "+string(body))
	l.mu.Unlock()
	return l.Client.Patch(ctx, obj, patch, opts...)
}

func (l *laggingWorkloads) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if l.readStale(key, obj) {
		return nil
	}
	return l.Client.Get(ctx, key, obj, opts...)
}

// TestAWorkloadWriteIsNotRepeatedFromALaggingCache: with the Deployments' cache one tick behind
// the controller's own writes (and the Canary's current), a release writes the target and the
// primary exactly as often as with a current cache: the canary's scale-up, the primary's
// promotion, the canary's scale-down; a tick that reads a workload as it was before our last
// write of it waits for the cache instead of writing it again. The run still promotes, and the
// lagging cache served stale Deployments (else the test simulates nothing).
func TestAWorkloadWriteIsNotRepeatedFromALaggingCache(t *testing.T) {
	h := newHarness(t)
	lag := newLaggingWorkloads(h.c)
	h.r = h.reconciler(lag, Options{StepEvents: true})
	h.app(2, "1")
	h.create(h.canaryFor())
	for i := 0; i < 40 && h.last.Phase != sluicev1.CanaryPhaseInitialized; i++ {
		lag.nextTick()
		h.tick()
	}
	if h.last.Phase != sluicev1.CanaryPhaseInitialized {
		t.Fatalf("phase %s, want Initialized\n%s", h.last.Phase, strings.Join(h.log, "\n"))
	}
	lag.mu.Lock()
	lag.patches = nil
	lag.mu.Unlock()
	lag.staleReads.Store(0)
	h.setImage("2")
	for i := 0; i < 60 && h.last.Phase != sluicev1.CanaryPhaseSucceeded; i++ {
		lag.nextTick()
		h.tick()
	}
	if h.last.Phase != sluicev1.CanaryPhaseSucceeded {
		t.Fatalf("phase %s, want Succeeded\n%s", h.last.Phase, strings.Join(h.log, "\n"))
	}
	// The ticks after the end (the echo of the scale-down, a later event) write nothing more.
	for range 3 {
		lag.nextTick()
		h.tick()
	}
	lag.mu.Lock()
	defer lag.mu.Unlock()
	if lag.staleReads.Load() == 0 {
		t.Fatal("the lagging cache served no stale Deployment: the test simulates nothing")
	}
	// Each write as the patch it sends starts: the target's replicas, the primary's new template.
	want := []string{`podinfo: {"spec":{"replicas":2}}`, `podinfo-primary: {"metadata":{"annotations":`, `podinfo: {"spec":{"replicas":0}}`}
	if len(lag.patches) != len(want) {
		t.Fatalf("%d Deployment patches during the release, want %d (the canary's scale-up, the primary's promotion, the canary's scale-down):\n%s\n\n%s",
			len(lag.patches), len(want), strings.Join(lag.patches, "\n"), strings.Join(h.log, "\n"))
	}
	for i, p := range lag.patches {
		if !strings.HasPrefix(p, want[i]) {
			t.Fatalf("patch %d is %q, want one starting %q", i, p, want[i])
		}
	}
	if !strings.Contains(lag.patches[1], `"image":"ghcr.io/stefanprodan/podinfo:2"`) {
		t.Fatalf("the promotion does not copy the new image to the primary: %s", lag.patches[1])
	}
}
