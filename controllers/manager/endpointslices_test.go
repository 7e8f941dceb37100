package manager_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/manager"
	"sluice.dev/sluice/test/testenv"
)

// sliceRequests records the requests for EndpointSlices: method, path and query.
type sliceRequests struct {
	mu   sync.Mutex
	seen []string
}

func (l *sliceRequests) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		if strings.Contains(r.URL.Path, "/endpointslices") {
			l.mu.Lock()
			l.seen = append(l.seen, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery)
			l.mu.Unlock()
		}
		return rt.RoundTrip(r)
	})
}

func (l *sliceRequests) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.seen...)
}

// canaryReconciles is how many reconciles of the canary controller have ended in this process
// (controller-runtime's histogram).
func canaryReconciles(t *testing.T) uint64 {
	t.Helper()
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_time_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == "canary" {
					n += m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	return n
}

// replicaSetOf names a Deployment's ReplicaSet after its image (web-primary-app2).
func replicaSetOf(d *appsv1.Deployment) string {
	return d.Name + "-" + strings.NewReplacer(":", "", ".", "", "/", "").Replace(d.Spec.Template.Spec.Containers[0].Image)
}

// podEndpoint is a ready endpoint of pod.
func podEndpoint(pod, ip string) discoveryv1.Endpoint {
	return discoveryv1.Endpoint{Addresses: []string{ip, "10.9.9.9"}, Hostname: ptr.To(pod), NodeName: ptr.To("node-1"), Zone: ptr.To("z1"),
		Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)},
		TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: "x", Name: pod, UID: "u-" + "1"}}
}

// playDeploymentsNamingReplicaSets plays the Deployment controller for ns until ctx ends: every
// Deployment rolled out, the primary's status naming its ReplicaSet in the Progressing condition
// as the real controller's does (testenv.MarkRolledOut writes no condition).
func playDeploymentsNamingReplicaSets(ctx context.Context, ns, target string) {
	for ctx.Err() == nil {
		_ = testenv.MarkRolledOut(ctx, env.Client, ns, target)
		d := &appsv1.Deployment{}
		if env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: target + "-primary"}, d) == nil {
			n := ptr.Deref(d.Spec.Replicas, 1)
			st := appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n,
				Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue,
					Reason: "NewReplicaSetAvailable", Message: fmt.Sprintf("ReplicaSet %q has successfully progressed.", replicaSetOf(d))}}}
			if !equality.Semantic.DeepEqual(d.Status, st) {
				patch := client.MergeFrom(d.DeepCopy())
				d.Status = st
				_ = env.Client.Status().Patch(ctx, d, patch)
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// TestPrimaryEndpointsFromTheCache (issue 17) runs manager.New through a release whose primary
// Service's EndpointSlice lags the primary's rollout, the slices written by hand as the
// EndpointSlice controller writes them (envtest has none):
//   - the primary Service carries the role label; the cache holds its slice, trimmed, and not the
//     slice of another Service;
//   - the takeover waits while the slice lists the old ReplicaSet's pod, and the slice's change
//     wakes the Canary at once (well before plan.PollInterval);
//   - the only EndpointSlice requests are the informer's list and watch, selected by the role label.
func TestPrimaryEndpointsFromTheCache(t *testing.T) {
	testenv.Require(t, env)
	ns := env.Namespace(t)
	app(t, ns, "web", nil)
	c := canaryFor(ns, "web")
	c.Spec.Analysis.Interval = "3s" // longer than plan.PollInterval: only a wake brings the takeover within 1 s
	create(t, c)
	other := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "unrelated-abcde", Namespace: ns,
		Labels: map[string]string{discoveryv1.LabelServiceName: "unrelated"}}, AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{podEndpoint("unrelated-1", "10.0.0.9")}}
	create(t, other)

	log := &sliceRequests{}
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(log.wrap)
	ctx, cancel := context.WithCancel(context.Background())
	mgr, err := manager.New(ctx, cfg, manager.Options{Namespaces: []string{ns}, MetricsAddr: "0", ProbeAddr: "0", SkipNameValidation: true})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var wg sync.WaitGroup
	wg.Go(func() { playDeploymentsNamingReplicaSets(ctx, ns, "web") })
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
		wg.Wait()
	})
	waitCanary(t, ns, "web", 30*time.Second, "Initialized", func(c *sluicev1.Canary) bool { return c.Status.Phase == sluicev1.CanaryPhaseInitialized })

	svc := &corev1.Service{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web-primary"}, svc); err != nil {
		t.Fatal(err)
	}
	if svc.Labels[sluicev1.LabelServiceRole] != sluicev1.ServiceRolePrimary {
		t.Fatalf("primary Service labels %v: no %s=%s", svc.Labels, sluicev1.LabelServiceRole, sluicev1.ServiceRolePrimary)
	}
	primary := &appsv1.Deployment{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web-primary"}, primary); err != nil {
		t.Fatal(err)
	}
	// The slice as the EndpointSlice controller writes it: the Service's labels copied.
	labels := map[string]string{discoveryv1.LabelServiceName: "web-primary", discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io"}
	for k, v := range svc.Labels {
		labels[k] = v
	}
	slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "web-primary-x7k2p", Namespace: ns, Labels: labels},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{podEndpoint(replicaSetOf(primary)+"-aaaaa", "10.0.0.1")},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](9898)}}}
	create(t, slice)

	// What the cache holds: the primary's slice, trimmed; not the other Service's.
	var cached *discoveryv1.EndpointSlice
	for deadline := time.Now().Add(10 * time.Second); cached == nil && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		list := &discoveryv1.EndpointSliceList{}
		if err := mgr.GetCache().List(ctx, list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		for i := range list.Items {
			if list.Items[i].Name != slice.Name {
				t.Fatalf("the cache holds EndpointSlice %s, which no primary Service owns", list.Items[i].Name)
			}
			cached = &list.Items[i]
		}
	}
	if cached == nil {
		t.Fatal("the primary Service's EndpointSlice never reached the cache")
	}
	ep := cached.Endpoints[0]
	if len(cached.Ports) > 0 || len(cached.Labels) != 3 || len(cached.ManagedFields) > 0 || ep.Hostname != nil || ep.NodeName != nil || ep.Zone != nil ||
		len(ep.Addresses) != 1 || ep.TargetRef.UID != "" || ep.TargetRef.Name != slice.Endpoints[0].TargetRef.Name || ep.Conditions.Ready == nil {
		t.Fatalf("the cached slice is not trimmed to what the controller reads: %+v", cached)
	}

	setImage(t, ns, "web", "app:2")
	waitCanary(t, ns, "web", 60*time.Second, "Promoting with the primary rolled out", func(c *sluicev1.Canary) bool {
		d := &appsv1.Deployment{}
		return c.Status.Phase == sluicev1.CanaryPhasePromoting && c.Status.CanaryWeight > 0 &&
			env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web-primary"}, d) == nil &&
			d.Status.ObservedGeneration == d.Generation && strings.Contains(d.Status.Conditions[0].Message, "app2")
	})
	time.Sleep(2500 * time.Millisecond) // more than plan.PollInterval: the takeover has looked at the stale slice
	held := waitCanary(t, ns, "web", time.Second, "readable", func(*sluicev1.Canary) bool { return true })
	if held.Status.Phase != sluicev1.CanaryPhasePromoting || held.Status.CanaryWeight == 0 {
		t.Fatalf("the slice lists the old ReplicaSet's pod, yet the Canary is %s at weight %d", held.Status.Phase, held.Status.CanaryWeight)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(primary), primary); err != nil {
		t.Fatal(err)
	}
	// Right after a tick of the waiting takeover ends (it asked to look again in plan.PollInterval),
	// the slice catches up.
	ticks := canaryReconciles(t)
	for deadline := time.Now().Add(5 * time.Second); canaryReconciles(t) == ticks; time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the waiting takeover did not tick within 5 s")
		}
	}
	slice.Endpoints = []discoveryv1.Endpoint{podEndpoint(replicaSetOf(primary)+"-bbbbb", "10.0.0.2")}
	if err := env.Client.Update(ctx, slice); err != nil {
		t.Fatal(err)
	}
	updated := time.Now()
	waitCanary(t, ns, "web", 10*time.Second, "Succeeded", func(c *sluicev1.Canary) bool { return c.Status.Phase == sluicev1.CanaryPhaseSucceeded })
	// The last tick ended a moment before the update; the next look it asked for is an interval
	// away (3 s: the slices are watched, plan.awaitWatched), or plan.PollInterval (2 s) were they
	// polled: woken by the slice's watch event, the takeover comes at once.
	took := time.Since(updated)
	if took > time.Second {
		t.Errorf("the takeover came %s after the slice caught up: not woken by the slice", took)
	}
	t.Logf("the takeover came %s after the slice caught up (seen by polling the Canary every 100 ms)", took)

	for _, r := range log.all() {
		if !strings.HasPrefix(r, "GET ") || !strings.Contains(r, "labelSelector=sluice.dev%2Fservice-role%3Dprimary") {
			t.Errorf("an EndpointSlice request other than the cache's label-selected list and watch: %s", r)
		}
	}
	t.Logf("EndpointSlice requests: %v", log.all())
}
