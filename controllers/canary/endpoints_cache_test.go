package canary

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/test/testenv"
)

// primarySlice is an EndpointSlice of Service podinfo-primary as the EndpointSlice controller
// writes it: the Service's labels copied (the role label among them), one endpoint per pod.
func primarySlice(ns, canary string, eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "podinfo-primary-x7k2p", Namespace: ns, Labels: map[string]string{
			discoveryv1.LabelServiceName: "podinfo-primary", discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io",
			LabelCanary: canary, sluicev1.LabelServiceRole: sluicev1.ServiceRolePrimary}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   eps,
	}
}

// rolledOutWithReplicaSet is the status the Deployment controller writes for d rolled out on
// ReplicaSet rs: the counts and the Progressing condition naming rs.
func rolledOutWithReplicaSet(d *appsv1.Deployment, rs string) appsv1.DeploymentStatus {
	n := *d.Spec.Replicas
	return appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n,
		Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue,
			Reason: "NewReplicaSetAvailable", Message: fmt.Sprintf("ReplicaSet %q has successfully progressed.", rs)}}}
}

// primaryReplicaSet names the primary's ReplicaSet after its image tag (podinfo-primary-671).
func primaryReplicaSet(d *appsv1.Deployment) string {
	_, tag, _ := strings.Cut(d.Spec.Template.Spec.Containers[0].Image, ":")
	return "podinfo-primary-" + strings.ReplaceAll(tag, ".", "")
}

// tickNamingReplicaSets is harness.tick with the primary's Deployment played as the Deployment
// controller reports it: rolled out, its Progressing condition naming the ReplicaSet of its
// template (testenv.MarkRolledOut, which plays the others, writes no condition).
func (h *harness) tickNamingReplicaSets() {
	h.t.Helper()
	res, err := h.r.Reconcile(h.ctx, ctrl.Request{NamespacedName: client.ObjectKey{Namespace: h.ns, Name: h.name}})
	if err != nil {
		h.t.Fatal(err)
	}
	if err := testenv.MarkRolledOut(h.ctx, h.c, h.ns, "podinfo"); err != nil {
		h.t.Fatal(err)
	}
	if d := (&appsv1.Deployment{}); h.c.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: "podinfo-primary"}, d) == nil {
		patch := client.MergeFrom(d.DeepCopy())
		d.Status = rolledOutWithReplicaSet(d, primaryReplicaSet(d))
		if err := h.c.Status().Patch(h.ctx, d, patch); err != nil {
			h.t.Fatal(err)
		}
	}
	h.record()
	wait := res.RequeueAfter
	if wait <= 0 {
		wait = time.Second
	}
	h.clock.Step(wait)
}

// TestStaleSlicesHoldTheSwitch (issue 17): the takeover reads the primary's slices from the
// cache, which may lag. Slices from before the primary's rollout (two ready pods of the old
// ReplicaSet: as many as the new one has, so their counts pass) and slices half-way (one old pod,
// one new) keep all the traffic on the canary; slices listing the new ReplicaSet's pods alone let
// it move. The slices carry the role label, so the read never goes around the cache.
func TestStaleSlicesHoldTheSwitch(t *testing.T) {
	h := newHarness(t)
	var phase sluicev1.CanaryPhase
	around := &endpointSliceReads{Reader: h.c, phase: &phase, count: map[sluicev1.CanaryPhase]int{}}
	h.r.APIReader = around
	h.app(2, "6.7.0")
	h.create(h.canaryFor())
	for i := 0; i < 20 && h.last.Phase != sluicev1.CanaryPhaseInitialized; i++ {
		h.tickNamingReplicaSets()
	}
	if h.last.Phase != sluicev1.CanaryPhaseInitialized {
		t.Fatalf("not initialized: %s\n%s", h.last.Phase, strings.Join(h.log, "\n"))
	}
	slice := primarySlice(h.ns, h.name, endpoint("podinfo-primary-670-aaaaa", "10.0.0.1", true, false),
		endpoint("podinfo-primary-670-bbbbb", "10.0.0.2", true, false))
	if err := h.c.Create(h.ctx, slice); err != nil {
		t.Fatal(err)
	}
	h.setImage("6.7.1")
	for i := 0; i < 80 && h.last.Phase != sluicev1.CanaryPhasePromoting; i++ {
		h.tickNamingReplicaSets()
	}
	for i := 0; i < 3; i++ { // the primary rolls out to podinfo-primary-671
		h.tickNamingReplicaSets()
	}
	carried := h.last.CanaryWeight
	if h.last.Phase != sluicev1.CanaryPhasePromoting || carried == 0 || primaryReplicaSet(h.deployment("podinfo-primary")) != "podinfo-primary-671" {
		t.Fatalf("not promoting a rolled-out primary with traffic on the canary: %s at %d\n%s", h.last.Phase, carried, strings.Join(h.log, "\n"))
	}
	for _, stale := range [][]discoveryv1.Endpoint{
		slice.Endpoints, // from before the rollout
		{endpoint("podinfo-primary-670-bbbbb", "10.0.0.2", true, false), endpoint("podinfo-primary-671-ccccc", "10.0.0.3", true, false)},
	} {
		slice.Endpoints = stale
		if err := h.c.Update(h.ctx, slice); err != nil {
			t.Fatal(err)
		}
		// Three looks each: the slices are watched, so the wait looks again only one interval
		// later (plan.awaitWatched), and the progress deadline is ten of them away.
		for i := 0; i < 3; i++ {
			h.tickNamingReplicaSets()
			if h.last.Phase != sluicev1.CanaryPhasePromoting || h.last.CanaryWeight != carried {
				t.Fatalf("slices %s: %s at weight %d, want the traffic held on the canary\n%s", describe(stale), h.last.Phase,
					h.last.CanaryWeight, strings.Join(h.log, "\n"))
			}
		}
	}
	slice.Endpoints = []discoveryv1.Endpoint{endpoint("podinfo-primary-670-bbbbb", "10.0.0.2", false, true),
		endpoint("podinfo-primary-671-ccccc", "10.0.0.3", true, false), endpoint("podinfo-primary-671-ddddd", "10.0.0.4", true, false)}
	if err := h.c.Update(h.ctx, slice); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10 && h.last.Phase != sluicev1.CanaryPhaseSucceeded; i++ {
		h.tickNamingReplicaSets()
	}
	if h.last.Phase != sluicev1.CanaryPhaseSucceeded || h.last.CanaryWeight != 0 {
		t.Fatalf("after the slices caught up: %s at weight %d\n%s", h.last.Phase, h.last.CanaryWeight, strings.Join(h.log, "\n"))
	}
	if len(around.count) != 0 {
		t.Fatalf("EndpointSlices read around the cache: %v, want none (the slices carry the role label)", around.count)
	}
	t.Log("\n" + strings.Join(h.log, "\n"))
}

// TestPrimaryServiceCarriesRoleLabel: the primary Service (alone of the three) carries the role
// label the cache selects its EndpointSlices by, and a primary Service without it — created by an
// older Sluice — gets it on the next reconcile of an idle Canary.
func TestPrimaryServiceCarriesRoleLabel(t *testing.T) {
	h := newHarness(t)
	h.app(1, "6.7.0")
	h.create(h.canaryFor())
	h.runUntil(sluicev1.CanaryPhaseInitialized, 20)
	role := func(name string) string {
		svc := &corev1.Service{}
		if err := h.c.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: name}, svc); err != nil {
			t.Fatal(err)
		}
		return svc.Labels[sluicev1.LabelServiceRole]
	}
	for name, want := range map[string]string{"podinfo-primary": sluicev1.ServiceRolePrimary, "podinfo": "", "podinfo-canary": ""} {
		if got := role(name); got != want {
			t.Errorf("Service %s: %s=%q, want %q", name, sluicev1.LabelServiceRole, got, want)
		}
	}
	svc := &corev1.Service{}
	if err := h.c.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: "podinfo-primary"}, svc); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(svc.DeepCopy())
	delete(svc.Labels, sluicev1.LabelServiceRole) // as an older Sluice created it
	if err := h.c.Patch(h.ctx, svc, patch); err != nil {
		t.Fatal(err)
	}
	h.tick()
	if got := role("podinfo-primary"); got != sluicev1.ServiceRolePrimary {
		t.Fatalf("a primary Service without the role label still has %q after a reconcile", got)
	}
}

// TestEndpointSliceWakesOnlyCanariesWaitingOnIt (on the real apiserver): a change of a primary
// Service's EndpointSlice wakes its Canary when the canary holds traffic (a tick may be waiting
// for those endpoints to return it), never an idle Canary, and nothing for a slice without the
// role label or of a Canary that does not exist.
func TestEndpointSliceWakesOnlyCanariesWaitingOnIt(t *testing.T) {
	testenv.Require(t, env)
	ns := env.Namespace(t)
	ctx := t.Context()
	for name, weight := range map[string]int32{"waiting": 50, "idle": 0} {
		c := seedCanary(ns)
		c.Name = name
		if err := env.Client.Create(ctx, c); err != nil {
			t.Fatal(err)
		}
		patch := client.MergeFrom(c.DeepCopy())
		c.Status.Phase, c.Status.CanaryWeight = sluicev1.CanaryPhasePromoting, weight
		if weight == 0 {
			c.Status.Phase = sluicev1.CanaryPhaseSucceeded
		}
		if err := env.Client.Status().Patch(ctx, c, patch); err != nil {
			t.Fatal(err)
		}
	}
	r := &Reconciler{Client: env.Client, Scheme: env.Scheme}
	handler := r.endpointSliceHandler()
	unlabelled := primarySlice(ns, "waiting")
	delete(unlabelled.Labels, sluicev1.LabelServiceRole)
	for _, tc := range []struct {
		name  string
		slice *discoveryv1.EndpointSlice
		wakes []string
	}{
		{"the slice of a Canary holding traffic", primarySlice(ns, "waiting"), []string{"waiting"}},
		{"the slice of an idle Canary", primarySlice(ns, "idle"), nil},
		{"a slice without the role label", unlabelled, nil},
		{"the slice of no Canary", primarySlice(ns, "gone"), nil},
	} {
		q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
		old := tc.slice.DeepCopy()
		tc.slice.Endpoints = []discoveryv1.Endpoint{endpoint("podinfo-primary-671-ccccc", "10.0.0.3", true, false)}
		handler.Update(ctx, event.UpdateEvent{ObjectOld: old, ObjectNew: tc.slice}, q)
		handler.Create(ctx, event.CreateEvent{Object: tc.slice}, q)
		var got []string
		for q.Len() > 0 {
			req, _ := q.Get()
			got = append(got, req.Name)
			q.Done(req)
		}
		q.ShutDown()
		if fmt.Sprint(got) != fmt.Sprint(tc.wakes) {
			t.Errorf("%s: woke %v, want %v", tc.name, got, tc.wakes)
		}
	}
}
