package canary

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/internal/reconcilekit"
	"sluice.dev/sluice/test/testenv"
)

const quotaMessage = `pods "podinfo-primary-7d9f-x" is forbidden: exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2`

// TestInitializationStallsPastTheDeadlineWithTheRootCause adopts a serving Service whose primary
// can never become ready (the ReplicaSet cannot create pods: a quota): while waiting the
// conditions say what the primary waits on; past the progress deadline the Canary is Stalled with
// the Deployment's FailedCreate message, with one warning event; the Service keeps selecting the
// user's pods and no route is written (never an outage); once the cause is fixed it initializes.
func TestInitializationStallsPastTheDeadlineWithTheRootCause(t *testing.T) {
	h := newHarness(t)
	h.app(2, "6.0.0")
	if err := testenv.MarkRolledOut(h.ctx, h.c, h.ns, "podinfo"); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "podinfo", Namespace: h.ns},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "podinfo"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 9898, TargetPort: intstr.FromInt32(9898)}}}}
	if err := h.c.Create(h.ctx, svc); err != nil {
		t.Fatal(err)
	}
	c := h.canaryFor()
	c.Spec.ProgressDeadlineSeconds = ptr.To(int32(60))
	h.create(c)

	tick := func() {
		t.Helper()
		before := h.workloadVersions()
		res, err := h.r.Reconcile(h.ctx, ctrl.Request{NamespacedName: client.ObjectKey{Namespace: h.ns, Name: h.name}})
		if err != nil {
			t.Fatalf("reconcile: %v", err)
		}
		// The Deployment controller: the target serves, the primary's ReplicaSet cannot create pods.
		if err := testenv.MarkRolledOut(h.ctx, h.c, h.ns, "podinfo"); err != nil {
			t.Fatal(err)
		}
		if p := (&appsv1.Deployment{}); h.c.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: "podinfo-primary"}, p) == nil &&
			len(p.Status.Conditions) == 0 {
			patch := client.MergeFrom(p.DeepCopy())
			p.Status = appsv1.DeploymentStatus{ObservedGeneration: p.Generation, Conditions: []appsv1.DeploymentCondition{{
				Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate", Message: quotaMessage}}}
			if err := h.c.Status().Patch(h.ctx, p, patch); err != nil {
				t.Fatal(err)
			}
		}
		h.clock.Step(h.nextTickIn(before, res.RequeueAfter))
	}
	var stalledEvents int
	countEvents := func() {
		for _, e := range h.events.drain() {
			if strings.HasPrefix(e, "["+sluicev1.ReasonInitializationStalled+"]") {
				stalledEvents++
				if !strings.Contains(e, "exceeded quota: q") {
					t.Errorf("stall event without the root cause: %s", e)
				}
			}
		}
	}
	// Tick while the deadline is ahead (a waiting Canary looks again at its watches' changes and at
	// the deadline, plan/waits.go).
	for i := 0; i < 5 && h.clock.Now().Sub(h.start) < 50*time.Second; i++ {
		tick()
		countEvents()
	}
	got := h.canary()
	if got.Status.Phase != sluicev1.CanaryPhaseInitializing {
		t.Fatalf("phase %s, want Initializing", got.Status.Phase)
	}
	ready := reconcilekit.FindCondition(got, sluicev1.ConditionReady)
	if ready == nil || ready.Reason != sluicev1.ReasonInitializing || !strings.Contains(ready.Message, "FailedCreate: "+quotaMessage) {
		t.Fatalf("while waiting, Ready should name what the primary waits on: %+v", ready)
	}
	if st := reconcilekit.FindCondition(got, sluicev1.ConditionStalled); st != nil {
		t.Fatalf("Stalled before the deadline: %+v", st)
	}
	for h.clock.Now().Sub(h.start) <= 3*time.Minute {
		tick()
		countEvents()
	}
	got = h.canary()
	if got.Status.Phase != sluicev1.CanaryPhaseInitializing {
		t.Fatalf("phase %s, want Initializing (still waiting, reported stalled)", got.Status.Phase)
	}
	st := reconcilekit.FindCondition(got, sluicev1.ConditionStalled)
	if st == nil || st.Status != metav1.ConditionTrue || st.Reason != sluicev1.ReasonInitializationStalled ||
		!strings.Contains(st.Message, "progress deadline (1m0s)") || !strings.Contains(st.Message, quotaMessage) {
		t.Fatalf("past the deadline Stalled should name the deadline and the root cause: %+v", st)
	}
	ready = reconcilekit.FindCondition(got, sluicev1.ConditionReady)
	if ready == nil || ready.Status != metav1.ConditionFalse || !strings.Contains(ready.Message, quotaMessage) {
		t.Fatalf("Ready should keep the root cause: %+v", ready)
	}
	if stalledEvents != 1 {
		t.Fatalf("%d InitializationStalled events, want 1", stalledEvents)
	}
	// Never an outage: the Service still selects the user's pods, no route was written.
	cur := &corev1.Service{}
	if err := h.c.Get(h.ctx, client.ObjectKeyFromObject(svc), cur); err != nil {
		t.Fatal(err)
	}
	if cur.Spec.Selector["app"] != "podinfo" {
		t.Fatalf("the Service moved before the primary served: selector %v", cur.Spec.Selector)
	}
	if w := h.routeWeights(); w.Primary != -1 {
		t.Fatalf("a route was written while the primary was unready: %+v", w)
	}

	// The quota is lifted: the primary rolls out and the initialization completes by itself.
	if err := testenv.MarkRolledOut(h.ctx, h.c, h.ns); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5 && h.canary().Status.Phase != sluicev1.CanaryPhaseInitialized; i++ {
		if _, err := h.r.Reconcile(h.ctx, ctrl.Request{NamespacedName: client.ObjectKey{Namespace: h.ns, Name: h.name}}); err != nil {
			t.Fatal(err)
		}
		if err := testenv.MarkRolledOut(h.ctx, h.c, h.ns); err != nil {
			t.Fatal(err)
		}
	}
	got = h.canary()
	if got.Status.Phase != sluicev1.CanaryPhaseInitialized {
		t.Fatalf("phase %s after the cause was fixed, want Initialized", got.Status.Phase)
	}
	if st := reconcilekit.FindCondition(got, sluicev1.ConditionStalled); st != nil {
		t.Fatalf("Stalled kept after initialization: %+v", st)
	}
}

// TestPodProblemsNameWhyPodsAreNotReady: without a Deployment condition, the pods' own reasons.
func TestPodProblemsNameWhyPodsAreNotReady(t *testing.T) {
	pods := []corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "app",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "Back-off pulling image x:nope"}}}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled,
			Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/2 nodes are available"}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "app",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}}}},
	}
	got := podProblems(pods)
	for _, want := range []string{"pod a: container app ImagePullBackOff: Back-off pulling image x:nope", "pod b: Unschedulable: 0/2 nodes are available"} {
		if !strings.Contains(got, want) {
			t.Errorf("podProblems = %q, want it to contain %q", got, want)
		}
	}
	if strings.Contains(got, "ContainerCreating") {
		t.Errorf("podProblems = %q names a normal start as a problem", got)
	}
}
