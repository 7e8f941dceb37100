package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

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
	// stepped: when the run was first seen with a canary weight above 0 (its first step).
	stepped map[client.ObjectKey]time.Time
	// weightSeen: when each new canary weight of the run was first seen, then when it was first
	// seen Promoting (the last check passed); the gaps are the checks' cadence.
	weightSeen map[client.ObjectKey][]time.Time
	lastWeight map[client.ObjectKey]int32
	// baseGen: the generation of every target and primary Deployment when the release started;
	// canaryReady and primaryRolled: when the target (the canary, scaled up by the run) was first
	// seen ready at a later generation, and the primary rolled out at a later one (promoted). They
	// split a run's time between the cluster (pods starting) and Sluice (reacting to it).
	baseGen                    map[client.ObjectKey]int64
	canaryReady, primaryRolled map[client.ObjectKey]time.Time
	// watchEvents counts, while counting is set, the changes the manager's watches deliver, by
	// kind and what changed (see watchEventKind): what wakes Canaries while they idle.
	counting    bool
	watchEvents map[string]int
}

// startTracker starts the informers and waits for them to sync. errors: a cache that cannot start.
func startTracker(ctx context.Context, cfg *rest.Config) (*tracker, error) {
	c, err := cache.New(cfg, cache.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, err
	}
	t := &tracker{cache: c, initialized: map[client.ObjectKey]time.Time{}, base: map[client.ObjectKey]string{},
		done: map[client.ObjectKey]time.Time{}, failed: map[client.ObjectKey]bool{},
		progressing: map[client.ObjectKey]time.Time{}, promoting: map[client.ObjectKey]time.Time{},
		stepped: map[client.ObjectKey]time.Time{}, weightSeen: map[client.ObjectKey][]time.Time{},
		lastWeight: map[client.ObjectKey]int32{}, baseGen: map[client.ObjectKey]int64{},
		canaryReady: map[client.ObjectKey]time.Time{}, primaryRolled: map[client.ObjectKey]time.Time{}}
	inf, err := c.GetInformer(ctx, &sluicev1.Canary{})
	if err != nil {
		return nil, err
	}
	deployments, err := c.GetInformer(ctx, &appsv1.Deployment{})
	if err != nil {
		return nil, err
	}
	observe := func(o any) {
		switch x := o.(type) {
		case *sluicev1.Canary:
			t.observe(x, time.Now())
		case *appsv1.Deployment:
			t.observeDeployment(x, time.Now())
		}
	}
	for _, i := range []cache.Informer{inf, deployments} {
		if _, err := i.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc: observe, UpdateFunc: func(_, o any) { observe(o) },
		}); err != nil {
			return nil, err
		}
	}
	t.watchEvents = map[string]int{}
	// What else the canary controller watches: Services and HTTPRoutes (owned), ConfigMaps
	// (tracked configs; Secrets are not used by the benchmark's applications).
	others := []cache.Informer{inf, deployments}
	for _, o := range []client.Object{&corev1.Service{}, &gwv1.HTTPRoute{}, &corev1.ConfigMap{}} {
		i, err := c.GetInformer(ctx, o)
		if err != nil {
			return nil, err
		}
		others = append(others, i)
	}
	for _, i := range others {
		if _, err := i.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { t.countEvent("created", nil, o) },
			UpdateFunc: func(old, o any) { t.countEvent("", old, o) },
			DeleteFunc: func(o any) { t.countEvent("deleted", nil, o) },
		}); err != nil {
			return nil, err
		}
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
		if _, seen := t.stepped[key]; !seen && st.CanaryWeight > 0 {
			t.stepped[key] = now
		}
		if st.CanaryWeight > t.lastWeight[key] {
			t.lastWeight[key] = st.CanaryWeight
			t.weightSeen[key] = append(t.weightSeen[key], now)
		}
	case sluicev1.CanaryPhasePromoting:
		if _, seen := t.promoting[key]; !seen {
			t.promoting[key] = now
			t.weightSeen[key] = append(t.weightSeen[key], now)
		}
	case sluicev1.CanaryPhaseSucceeded:
		t.done[key] = now
	case sluicev1.CanaryPhaseFailed:
		t.done[key], t.failed[key] = now, true
	}
}

// countEvent counts a watch event while counting: "KIND NAME-ROLE WHAT" where WHAT is created,
// deleted, spec (the generation moved), status/data (a Deployment's status, a ConfigMap's data) or metadata.
func (t *tracker) countEvent(what string, old, o any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.counting {
		return
	}
	obj, ok := o.(client.Object)
	if !ok {
		if tomb, isTomb := o.(toolscache.DeletedFinalStateUnknown); isTomb {
			obj, ok = tomb.Obj.(client.Object)
		}
		if !ok {
			return
		}
	}
	kind := fmt.Sprintf("%T", obj)
	kind = kind[strings.LastIndex(kind, ".")+1:]
	if kind == "Deployment" {
		kind = "Deployment (target)"
		if strings.HasSuffix(obj.GetName(), primarySuffix) {
			kind = "Deployment (primary)"
		}
	}
	if what == "" {
		what = "metadata"
		prev, _ := old.(client.Object)
		switch {
		case prev != nil && prev.GetGeneration() != obj.GetGeneration():
			what = "spec"
		case prev != nil && prev.GetResourceVersion() != obj.GetResourceVersion() && equalMeta(prev, obj):
			what = "status/data"
		}
	}
	t.watchEvents[kind+" "+what]++
}

// equalMeta reports whether two versions of an object carry the same labels, annotations,
// owners and finalizers (a change between them is then in the status, or the data).
func equalMeta(a, b client.Object) bool {
	return fmt.Sprint(a.GetLabels(), a.GetAnnotations(), a.GetOwnerReferences(), a.GetFinalizers()) ==
		fmt.Sprint(b.GetLabels(), b.GetAnnotations(), b.GetOwnerReferences(), b.GetFinalizers())
}

// countWatchEvents starts (on) or stops counting watch events and returns the counts so far.
func (t *tracker) countWatchEvents(on bool) map[string]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := t.watchEvents
	t.counting, t.watchEvents = on, map[string]int{}
	return out
}

// observeDeployment records when a released target (the canary) is first ready, and a primary
// first rolled out, at a generation later than the release's start.
func (t *tracker) observeDeployment(d *appsv1.Deployment, now time.Time) {
	key := client.ObjectKeyFromObject(d)
	app, isPrimary := key, strings.HasSuffix(key.Name, primarySuffix)
	if isPrimary {
		app.Name = strings.TrimSuffix(key.Name, primarySuffix)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, releasing := t.base[app]; !releasing {
		return
	}
	if base, ok := t.baseGen[key]; !ok || d.Generation <= base || !rolledOut(d) {
		return
	}
	seen := t.canaryReady
	if isPrimary {
		seen = t.primaryRolled
	}
	if _, ok := seen[app]; !ok {
		seen[app] = now
	}
}

// primarySuffix names the primary Deployment of a target.
const primarySuffix = "-primary"

// rolledOut: every desired replica runs the current template and is ready, and no other is left.
func rolledOut(d *appsv1.Deployment) bool {
	want := ptr.Deref(d.Spec.Replicas, 1)
	s := d.Status
	return want > 0 && s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == want && s.Replicas == want && s.ReadyReplicas == want
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
		for _, name := range []string{a.name, a.name + primarySuffix} {
			d := &appsv1.Deployment{}
			if err := t.cache.Get(ctx, client.ObjectKey{Namespace: a.ns, Name: name}, d); err != nil {
				return err
			}
			t.baseGen[client.ObjectKeyFromObject(d)] = d.Generation
		}
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
	if err := t.cache.List(ctx, list, client.MatchingLabels{labelBench: benchTarget}, client.UnsafeDisableDeepCopy); err != nil {
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

// stepGaps returns the time between a's successive canary weights, and from the last weight to
// Promoting: how long each check took to come, from the benchmark's watch.
func (t *tracker) stepGaps(a app) []time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	seen := t.weightSeen[a.key()]
	var out []time.Duration
	for i := 1; i < len(seen); i++ {
		out = append(out, seen[i].Sub(seen[i-1]))
	}
	return out
}

// clusterTimes returns when a's canary was first ready, its run took its first step, and its
// primary rolled out the promoted revision (zero when not seen).
func (t *tracker) clusterTimes(a app) (canaryReady, stepped, primaryRolled time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.canaryReady[a.key()], t.stepped[a.key()], t.primaryRolled[a.key()]
}
