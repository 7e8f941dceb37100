package canary

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/test/testenv"
)

// setReady writes a Deployment's status as its controller would with ready of its replicas ready.
func (h *harness) setReady(name string, ready int32) {
	h.t.Helper()
	d := h.deployment(name)
	n := ptr.Deref(d.Spec.Replicas, 1)
	patch := client.MergeFrom(d.DeepCopy())
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: max(n, ready), UpdatedReplicas: max(n, ready),
		ReadyReplicas: ready, AvailableReplicas: ready}
	if err := h.c.Status().Patch(h.ctx, d, patch); err != nil {
		h.t.Fatalf("writing the status of %s: %v", name, err)
	}
}

// tickSlowPrimary reconciles once while the primary's pods start one per tick (the canary's are
// ready at once), logs and advances the clock.
func (h *harness) tickSlowPrimary() {
	h.t.Helper()
	res, err := h.r.Reconcile(h.ctx, ctrl.Request{NamespacedName: client.ObjectKey{Namespace: h.ns, Name: h.name}})
	if err != nil {
		h.t.Fatalf("reconcile: %v", err)
	}
	if err := testenv.MarkRolledOut(h.ctx, h.c, h.ns, "podinfo"); err != nil {
		h.t.Fatal(err)
	}
	p := h.deployment("podinfo-primary")
	h.setReady("podinfo-primary", min(ptr.Deref(p.Spec.Replicas, 1), p.Status.ReadyReplicas+1))
	h.record()
	wait := res.RequeueAfter
	if wait <= 0 {
		wait = time.Second
	}
	h.clock.Step(wait)
}

// TestRollbackNeverPutsThePrimaryBelowItsShare (issue 16): a weighted run whose canary serves 50 %
// with 6 ready replicas (its HPA scaled it) while the primary has 3 fails its check. The canary
// keeps its share while the primary scales up to 6, its pods starting one per tick; the primary's
// share grows only once it has 6 ready, and then the canary scales down.
func TestRollbackNeverPutsThePrimaryBelowItsShare(t *testing.T) {
	h := newHarness(t)
	h.app(3, "6.7.0")
	c := h.canaryFor()
	c.Spec.Analysis.Threshold = 1
	h.create(c)
	h.runUntil(sluicev1.CanaryPhaseInitialized, 20)
	h.setImage("6.7.1")
	for i := 0; i < 60 && h.last.CanaryWeight < 50; i++ {
		h.tick()
	}
	if h.last.CanaryWeight != 50 {
		t.Fatalf("never reached weight 50\n%s", strings.Join(h.log, "\n"))
	}
	target := h.deployment("podinfo")
	patch := client.MergeFrom(target.DeepCopy())
	target.Spec.Replicas = ptr.To[int32](6) // the canary's HPA under its share
	if err := h.c.Patch(h.ctx, target, patch); err != nil {
		t.Fatal(err)
	}
	markDeploymentsRolledOut(t, h.c, h.ns)
	if r := h.deployment("podinfo-primary").Status.ReadyReplicas; r != 3 {
		t.Fatalf("primary has %d ready replicas before the failing check, want 3", r)
	}

	h.analyzer.fail = func(int32) bool { return true }
	held := 0
	for i := 0; i < 40 && !(h.last.Phase == sluicev1.CanaryPhaseFailed && h.last.CanaryWeight == 0); i++ {
		before := h.routeWeights()
		h.tickSlowPrimary()
		after := h.routeWeights()
		ready := h.deployment("podinfo-primary").Status.ReadyReplicas
		if after.Primary > before.Primary && ready < 6 {
			t.Fatalf("the primary's share grew from %d%% to %d%% with %d ready replicas; the canary served 50%% with 6\n%s",
				before.Primary, after.Primary, ready, strings.Join(h.log, "\n"))
		}
		if h.last.Phase == sluicev1.CanaryPhaseFailed && after.Canary == 50 {
			held++
			if r := ptr.Deref(h.deployment("podinfo").Spec.Replicas, 0); r != 6 {
				t.Fatalf("the canary holds 50%% with %d replicas asked for\n%s", r, strings.Join(h.log, "\n"))
			}
		}
	}
	log := strings.Join(h.log, "\n")
	if h.last.Phase != sluicev1.CanaryPhaseFailed || h.last.CanaryWeight != 0 {
		t.Fatalf("phase %s weight %d, want Failed at 0\n%s", h.last.Phase, h.last.CanaryWeight, log)
	}
	if held == 0 {
		t.Fatalf("the canary's share never waited for the primary\n%s", log)
	}
	if w := h.routeWeights(); w.Primary != 100 || w.Canary != 0 {
		t.Fatalf("route %+v after the rollback", w)
	}
	if r := ptr.Deref(h.deployment("podinfo-primary").Spec.Replicas, 0); r < 6 {
		t.Fatalf("primary replicas %d, want at least 6", r)
	}
	h.tick()
	if r := ptr.Deref(h.deployment("podinfo").Spec.Replicas, -1); r != 0 {
		t.Fatalf("canary replicas %d after the traffic returned", r)
	}
	for _, want := range []string{"[TrafficHeldForPrimary]", "[TrafficReturned]"} {
		if !strings.Contains(log, want) {
			t.Fatalf("no %s event\n%s", want, log)
		}
	}
	t.Log("\n" + log)
}
