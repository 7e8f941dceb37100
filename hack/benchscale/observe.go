package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/scheme"
)

// tracker watches the Canaries (and the targets) from the benchmark's own informers, recording
// when each Canary first showed Initialized and when its run of the new revision ended. Its
// requests are the benchmark's, not the manager's.
type tracker struct {
	cache cache.Cache

	mu          sync.Mutex
	initialized map[client.ObjectKey]time.Time
	base        map[client.ObjectKey]string // lastPromotedSpec when the release started
	done        map[client.ObjectKey]time.Time
	failed      map[client.ObjectKey]bool
	// progressing and promoting: when the run of the new revision was first seen in that phase.
	progressing, promoting map[client.ObjectKey]time.Time
}

// startTracker starts the informers and waits for them to sync. errors: a cache that cannot start.
func startTracker(ctx context.Context, cfg *rest.Config) (*tracker, error) {
	sel := labels.SelectorFromSet(labels.Set{labelBench: benchTarget})
	c, err := cache.New(cfg, cache.Options{Scheme: scheme.New(),
		ByObject: map[client.Object]cache.ByObject{&appsv1.Deployment{}: {Label: sel}}})
	if err != nil {
		return nil, err
	}
	t := &tracker{cache: c, initialized: map[client.ObjectKey]time.Time{}, base: map[client.ObjectKey]string{},
		done: map[client.ObjectKey]time.Time{}, failed: map[client.ObjectKey]bool{},
		progressing: map[client.ObjectKey]time.Time{}, promoting: map[client.ObjectKey]time.Time{}}
	inf, err := c.GetInformer(ctx, &sluicev1.Canary{})
	if err != nil {
		return nil, err
	}
	if _, err := c.GetInformer(ctx, &appsv1.Deployment{}); err != nil {
		return nil, err
	}
	observe := func(o any) {
		if cn, ok := o.(*sluicev1.Canary); ok {
			t.observe(cn, time.Now())
		}
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: observe, UpdateFunc: func(_, o any) { observe(o) },
	}); err != nil {
		return nil, err
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("benchmark informers did not sync")
	}
	return t, nil
}

func (t *tracker) observe(c *sluicev1.Canary, now time.Time) {
	key := client.ObjectKeyFromObject(c)
	st := c.Status
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.initialized[key]; !ok && st.LastPromotedSpec != "" && st.Phase != sluicev1.CanaryPhaseInitializing {
		t.initialized[key] = now
	}
	base, releasing := t.base[key]
	if _, ended := t.done[key]; !releasing || ended || st.LastAppliedSpec == base {
		return
	}
	switch st.Phase {
	case sluicev1.CanaryPhaseProgressing:
		if _, seen := t.progressing[key]; !seen {
			t.progressing[key] = now
		}
	case sluicev1.CanaryPhasePromoting:
		if _, seen := t.promoting[key]; !seen {
			t.promoting[key] = now
		}
	case sluicev1.CanaryPhaseSucceeded:
		t.done[key] = now
	case sluicev1.CanaryPhaseFailed:
		t.done[key], t.failed[key] = now, true
	}
}

// initializedCount counts the Canaries that showed Initialized, and returns the times.
func (t *tracker) initializedTimes() []time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]time.Time, 0, len(t.initialized))
	for _, at := range t.initialized {
		out = append(out, at)
	}
	return out
}

// startRelease records the promoted revision of every Canary before its target changes.
// errors: a Canary missing from the cache.
func (t *tracker) startRelease(ctx context.Context, as []app) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, a := range as {
		c := &sluicev1.Canary{}
		if err := t.cache.Get(ctx, a.key(), c); err != nil {
			return err
		}
		t.base[a.key()] = c.Status.LastPromotedSpec
	}
	return nil
}

// ended returns how many runs ended and how many of those failed.
func (t *tracker) ended() (ended, failed int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.done), len(t.failed)
}

// endTime returns when a's run ended.
func (t *tracker) endTime(a app) (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	at, ok := t.done[a.key()]
	return at, ok
}

// phases counts the Canaries by phase (for progress lines).
func (t *tracker) phases(ctx context.Context) map[sluicev1.CanaryPhase]int {
	list := &sluicev1.CanaryList{}
	out := map[sluicev1.CanaryPhase]int{}
	if err := t.cache.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return out
	}
	for i := range list.Items {
		out[list.Items[i].Status.Phase]++
	}
	return out
}

// targetsReady counts the target Deployments whose pods are all available at their generation.
func (t *tracker) targetsReady(ctx context.Context) int {
	list := &appsv1.DeploymentList{}
	if err := t.cache.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return 0
	}
	n := 0
	for i := range list.Items {
		d := &list.Items[i]
		want := int32(1)
		if d.Spec.Replicas != nil {
			want = *d.Spec.Replicas
		}
		if d.Status.ObservedGeneration >= d.Generation && d.Status.AvailableReplicas == want && d.Status.Replicas == want {
			n++
		}
	}
	return n
}

// phaseTimes returns when a's run was first seen Progressing and Promoting (zero when not seen).
func (t *tracker) phaseTimes(a app) (progressing, promoting time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.progressing[a.key()], t.promoting[a.key()]
}
