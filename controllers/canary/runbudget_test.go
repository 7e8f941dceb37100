package canary

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"sluice.dev/sluice/analysis"
	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/internal/reconcilekit"
	"sluice.dev/sluice/providers"
	"sluice.dev/sluice/providers/gatewayapi"
	"sluice.dev/sluice/test/faults"
)

// slowCluster plays the Deployment controller and the kubelet: a Deployment whose spec changed is
// observed at once (its new pods not ready yet: a rolling primary keeps its old ones ready, a
// canary scaled up from zero has none), and its pods are ready podStart later.
type slowCluster struct {
	h        *harness
	podStart time.Duration
	readyAt  map[string]time.Time // deployment → when its starting pods are ready
	// slices, when set, plays the EndpointSlice controller for the primary, whose status then
	// names its ReplicaSet as the Deployment controller's does.
	slices *sliceController
}

// observe plays the Deployment controller; it reports whether a status changed (a watch event).
func (s *slowCluster) observe() bool {
	return s.play(func(d *appsv1.Deployment, n int32) (appsv1.DeploymentStatus, bool) {
		if d.Status.ObservedGeneration == d.Generation {
			return d.Status, false
		}
		ready := min(d.Status.ReadyReplicas, n)
		if n > 0 {
			s.readyAt[d.Name] = s.h.clock.Now().Add(s.podStart)
		}
		// A rolling Deployment keeps its old pods until the new ones are ready.
		return appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: n + ready, UpdatedReplicas: n, ReadyReplicas: ready, AvailableReplicas: ready}, true
	})
}

// next is when the next starting pods are ready (zero: none starting).
func (s *slowCluster) next() time.Time {
	var t time.Time
	for _, at := range s.readyAt {
		if t.IsZero() || at.Before(t) {
			t = at
		}
	}
	return t
}

// start plays the kubelet: pods due by now are ready; it reports whether a status changed.
func (s *slowCluster) start() bool {
	return s.play(func(d *appsv1.Deployment, n int32) (appsv1.DeploymentStatus, bool) {
		at, ok := s.readyAt[d.Name]
		if !ok || s.h.clock.Now().Before(at) {
			return d.Status, false
		}
		delete(s.readyAt, d.Name)
		st := d.Status
		st.Replicas, st.ReadyReplicas, st.AvailableReplicas = n, n, n
		return st, true
	})
}

func (s *slowCluster) play(f func(d *appsv1.Deployment, n int32) (appsv1.DeploymentStatus, bool)) bool {
	h := s.h
	list := &appsv1.DeploymentList{}
	if err := h.c.List(h.ctx, list, client.InNamespace(h.ns)); err != nil {
		h.t.Fatal(err)
	}
	changed := false
	for i := range list.Items {
		d := &list.Items[i]
		st, ok := f(d, ptr.Deref(d.Spec.Replicas, 1))
		if !ok {
			continue
		}
		primary := s.slices != nil && d.Name == "podinfo-primary"
		if primary {
			reason, msg := "ReplicaSetUpdated", "ReplicaSet %q is progressing."
			if st.ReadyReplicas >= st.UpdatedReplicas {
				reason, msg = "NewReplicaSetAvailable", "ReplicaSet %q has successfully progressed."
			}
			st.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue,
				Reason: reason, Message: fmt.Sprintf(msg, primaryReplicaSet(d))}}
		}
		patch := client.MergeFrom(d.DeepCopy())
		d.Status = st
		if err := h.c.Status().Patch(h.ctx, d, patch); err != nil {
			h.t.Fatal(err)
		}
		if primary {
			s.slices.sync(d)
		}
		changed = true
	}
	return changed
}

// runBudget is what one run of the scale benchmark's Canary shape may write: a status patch at
// the start (Progressing, the canary scaled up), one per weight step (5), one when the promotion
// starts (Promoting, written before the primary) and one at the end (Succeeded: route to the
// primary and the canary scaled down in the same tick); a route write per weight and one back to
// the primary; the canary scaled up and down and the primary promoted; and the events a user acts
// on: the new revision, the first check that advanced without evidence (this Canary has no
// metrics) and the success. The steps (weights, the start of the promotion) are not events
// (Options.StepEvents). The takeover reads the primary's EndpointSlices from the cache: no list
// goes to the apiserver (issue 17: it was the 21st request).
var runBudget = map[string]int{
	string(faults.Status): 8, string(faults.Route): 6, string(faults.Scale): 2, string(faults.Primary): 1,
	"events": 3, endpointSliceListsAround: 0,
}

// endpointSliceListsAround counts the EndpointSlice lists that go to the apiserver.
const endpointSliceListsAround = "EndpointSlice lists around the cache"

// maxRequestsPerRun is issue 17's bound on the API requests of one rollout.
const maxRequestsPerRun = 20

// TestRunRequestBudget runs the scale benchmark's Canary shape (Gateway API, interval 10 s,
// stepWeight 10 up to maxWeight 50, no metrics, advanceWithoutData) through a release, the cluster
// played with pods that take 3 s to start and watch events that wake the Canary at once, and holds
// the run to runBudget (a status patch only for a transition, none while pods start; the primary's
// EndpointSlices read from an informer cache selecting them by the role label, as the manager's),
// to maxRequestsPerRun, and to interval × steps plus the primary's rollout.
func TestRunRequestBudget(t *testing.T) {
	h := newHarness(t)
	h.app(1, "6.0.0")
	c := h.canaryFor()
	c.Spec.Mesh = ""
	c.Spec.Analysis = sluicev1.CanaryAnalysis{Interval: "10s", Threshold: 5, MaxWeight: 50, StepWeight: 10, AdvanceWithoutData: true}
	h.create(c)
	h.runUntil(sluicev1.CanaryPhaseInitialized, 10)
	for range 3 {
		h.tick()
	}
	// The primary as the Deployment controller reports it (naming its ReplicaSet) and its Service's
	// EndpointSlice as the EndpointSlice controller writes it, in the cache.
	sc := sliceCache(t, h.ns)
	primary := h.deployment("podinfo-primary")
	patch := client.MergeFrom(primary.DeepCopy())
	primary.Status = rolledOutWithReplicaSet(primary, primaryReplicaSet(primary))
	if err := h.c.Status().Patch(h.ctx, primary, patch); err != nil {
		t.Fatal(err)
	}
	slice := primarySlice(h.ns, h.name, endpoint(primaryReplicaSet(primary)+"-poda", "10.0.0.1", true, false))
	if err := h.c.Create(h.ctx, slice); err != nil {
		t.Fatal(err)
	}
	awaitCached(t, sc, slice)
	fc := faults.Wrap(env.Client)
	ev := &eventLog{}
	var phase sluicev1.CanaryPhase
	around := &endpointSliceReads{Reader: env.Client, phase: &phase, count: map[sluicev1.CanaryPhase]int{}}
	cached := &atomic.Int32{}
	h.r = &Reconciler{Client: sliceCacheClient{Client: fc, cache: sc, cached: cached}, APIReader: around, Scheme: env.Scheme,
		Recorder: ev, Clock: h.clock, Analyzer: noMetrics{},
		Routers: map[sluicev1.Provider]providers.Router{sluicev1.ProviderGatewayAPI: gatewayapi.New(fc)}}
	cluster := &slowCluster{h: h, podStart: 3 * time.Second, readyAt: map[string]time.Time{},
		slices: &sliceController{t: t, c: h.c, cache: sc, slice: slice, serves: primaryReplicaSet(primary)}}
	h.setImage("6.0.1")
	released := h.clock.Now()
	var trail []string
	seen, events := 0, 0
	for i := 0; i < 200 && h.canary().Status.Phase != sluicev1.CanaryPhaseSucceeded; i++ {
		res, err := h.r.Reconcile(h.ctx, ctrl.Request{NamespacedName: client.ObjectKey{Namespace: h.ns, Name: h.name}})
		if err != nil {
			t.Fatal(err)
		}
		at := h.clock.Now().Sub(released).Truncate(time.Millisecond)
		cur := h.canary()
		writes := fc.Writes()
		for _, w := range writes[seen:] {
			msg := ""
			if ready := reconcilekit.FindCondition(cur, sluicev1.ConditionReady); ready != nil {
				msg = ready.Message
			}
			trail = append(trail, fmt.Sprintf("%8s %-7s %-6s %s  (%s, weight %d: %s)", at, w.Kind, w.Verb, w.Name, cur.Status.Phase, cur.Status.CanaryWeight, msg))
		}
		seen = len(writes)
		for _, e := range ev.drain() {
			events++
			trail = append(trail, fmt.Sprintf("%8s event  %s", at, e))
		}
		if cluster.observe() {
			continue // the watch event wakes the Canary at once
		}
		wake := h.clock.Now().Add(res.RequeueAfter)
		if res.RequeueAfter <= 0 {
			wake = h.clock.Now().Add(time.Hour)
		}
		if at := cluster.next(); !at.IsZero() && at.Before(wake) {
			wake = at
		}
		h.clock.SetTime(wake)
		cluster.start()
	}
	log := strings.Join(trail, "\n")
	if h.canary().Status.Phase != sluicev1.CanaryPhaseSucceeded {
		t.Fatalf("the run did not succeed:\n%s", log)
	}
	got := map[string]int{"events": events}
	for k, n := range fc.Counts() {
		got[string(k)] = n
	}
	for _, n := range around.count {
		got[endpointSliceListsAround] += n
	}
	total := 0
	for _, n := range got {
		total += n
	}
	if total > maxRequestsPerRun {
		t.Errorf("%d requests in the run (%v), more than %d", total, got, maxRequestsPerRun)
	}
	if cached.Load() == 0 {
		t.Errorf("the takeover never read the primary's EndpointSlices (from the cache)")
	}
	for k, want := range runBudget {
		if got[k] != want {
			t.Errorf("%s: %d in the run, budget %d", k, got[k], want)
		}
	}
	for k, n := range got {
		if _, ok := runBudget[k]; !ok && n > 0 {
			t.Errorf("%s: %d in the run, budget 0", k, n)
		}
	}
	// The run lasts interval × steps plus the primary's rollout: the canary's pods start within the
	// first interval, and every check comes when it is due.
	took := h.canary().Status.LastTransitionTime.Sub(released)
	if limit := 5*10*time.Second + cluster.podStart; took > limit {
		t.Errorf("the run took %s, more than interval × steps + the primary's pod start (%s):\n%s", took, limit, log)
	}
	t.Logf("the run took %s; %d requests (%v), %d EndpointSlice reads from the cache; its writes and events:\n%s",
		took, total, got, cached.Load(), log)
}

// noMetrics is the analysis of a Canary without metrics: no evidence.
type noMetrics struct{}

func (noMetrics) Analyze(context.Context, *sluicev1.Canary, time.Time) (analysis.Check, error) {
	return analysis.Check{}, nil
}

func (noMetrics) Ready(context.Context, *sluicev1.Canary) error { return nil }
