package canary

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// TestSuspendedRunGivesItsSlotUp: under --max-progressing=1, a run paused at weight 10 gives its
// slot up and the waiting run of another namespace starts; resumed, the paused run waits in line
// with its traffic where it was (never moved back), its checks going on, and advances again once
// the other run ended. At no point do two runs hold a slot.
func TestSuspendedRunGivesItsSlotUp(t *testing.T) {
	paused, other := newHarness(t), newHarness(t)
	r := paused.reconciler(namespacedLists{Client: env.Client, namespaces: []string{paused.ns, other.ns}}, Options{MaxProgressing: 1})
	clock := paused.clock
	var trail []string
	tick := func(h *harness) {
		t.Helper()
		res, err := r.Reconcile(h.ctx, ctrl.Request{NamespacedName: client.ObjectKey{Namespace: h.ns, Name: h.name}})
		if err != nil {
			t.Fatalf("reconcile %s: %v", h.ns, err)
		}
		markDeploymentsRolledOut(t, env.Client, h.ns)
		slots, line := 0, ""
		for _, o := range []*harness{paused, other} {
			c := o.canary()
			if holdsSlot(c) {
				slots++
			}
			reason := ""
			if ready := meta.FindStatusCondition(c.Status.Conditions, sluicev1.ConditionReady); ready != nil {
				reason = ready.Reason
			}
			line += fmt.Sprintf("  %s/%d/%s", c.Status.Phase, c.Status.CanaryWeight, reason)
		}
		trail = append(trail, line)
		if slots > 1 {
			t.Fatalf("%d runs hold a slot under a cap of 1\n%s", slots, strings.Join(trail, "\n"))
		}
		clock.Step(min(max(res.RequeueAfter, time.Second), time.Minute))
	}
	until := func(h *harness, what string, cond func(*sluicev1.Canary) bool) {
		t.Helper()
		for range 60 {
			tick(h)
			if cond(h.canary()) {
				return
			}
		}
		t.Fatalf("%s: not %s\n%s", h.ns, what, strings.Join(trail, "\n"))
	}
	suspend := func(h *harness, on bool) {
		t.Helper()
		c := h.canary()
		patch := client.MergeFrom(c.DeepCopy())
		c.Spec.Suspend = on
		if err := h.c.Patch(h.ctx, c, patch); err != nil {
			t.Fatal(err)
		}
	}
	for _, h := range []*harness{paused, other} {
		h.app(1, "1")
		h.create(h.canaryFor())
	}
	for _, h := range []*harness{paused, other} {
		until(h, "Initialized", func(c *sluicev1.Canary) bool { return c.Status.Phase == sluicev1.CanaryPhaseInitialized })
	}
	paused.setImage("2")
	until(paused, "at weight 10", func(c *sluicev1.Canary) bool { return c.Status.CanaryWeight == 10 })
	other.setImage("2")
	until(other, "waiting for the cap", func(c *sluicev1.Canary) bool { return heldByCap(c) })

	suspend(paused, true)
	until(paused, "paused, its slot given up", func(c *sluicev1.Canary) bool { return c.Status.SlotReleased })
	until(other, "started in the freed slot", func(c *sluicev1.Canary) bool { return c.Status.Phase == sluicev1.CanaryPhaseProgressing })

	suspend(paused, false)
	tick(paused)
	back := paused.canary()
	ready := meta.FindStatusCondition(back.Status.Conditions, sluicev1.ConditionReady)
	if back.Status.Phase != sluicev1.CanaryPhaseProgressing || back.Status.CanaryWeight != 10 || !back.Status.SlotReleased ||
		ready.Reason != sluicev1.ReasonRolloutCapReached || !strings.Contains(ready.Message, "waits in line") {
		t.Fatalf("resumed with the slot taken: phase %s weight %d released %v, Ready %+v; want held at 10 in line",
			back.Status.Phase, back.Status.CanaryWeight, back.Status.SlotReleased, ready)
	}
	checks := back.Status.Iterations
	for range 3 {
		tick(paused)
		if c := paused.canary(); c.Status.CanaryWeight != 10 {
			t.Fatalf("the run in line moved its weight to %d", c.Status.CanaryWeight)
		}
		tick(other)
	}
	if got := paused.canary().Status.Iterations; got <= checks {
		t.Errorf("no check of the run in line (iterations %d, then %d): its checks must go on", checks, got)
	}

	until(other, "delivered", func(c *sluicev1.Canary) bool { return c.Status.Phase == sluicev1.CanaryPhaseSucceeded })
	until(paused, "delivered once the slot freed", func(c *sluicev1.Canary) bool { return c.Status.Phase == sluicev1.CanaryPhaseSucceeded })
	if c := paused.canary(); c.Status.SlotReleased {
		t.Errorf("the delivered run still says its slot is released")
	}
}

// TestCapSharesSlotsAcrossNamespaces: under --max-progressing=2, tenant a holds both slots (a
// short run and a long one) and has two more revisions waiting when tenant b releases one. When a's
// short run ends, the slot goes to b — a namespace with no run in flight goes before one with a
// run, however long the latter's revisions have waited — and a's waiting runs start after it.
func TestCapSharesSlotsAcrossNamespaces(t *testing.T) {
	testenv := env
	if testenv == nil {
		t.Skip("needs envtest")
	}
	tenantA, tenantB := env.Namespace(t), env.Namespace(t)
	apps := []string{"short", "long", "waiting-1", "waiting-2"}
	for _, n := range apps {
		createApp(t, tenantA, n)
	}
	createApp(t, tenantB, "app")
	playDeploymentController(t, tenantA)
	playDeploymentController(t, tenantB)
	startManagerConfigured(t, managerConfig{analyzer: &scriptedAnalyzer{}, metricsAddr: "0", notifyTimeout: 2 * time.Second,
		namespaces: []string{tenantA, tenantB}, options: Options{MaxProgressing: 2}})
	canaryOf := func(ns, name, interval string) *sluicev1.Canary {
		c := fastCanary(ns)
		c.Name, c.Spec.TargetRef.Name = name, name
		c.Spec.Analysis.Interval = interval
		return c
	}
	ctx := t.Context()
	for _, c := range []*sluicev1.Canary{canaryOf(tenantA, "short", "1s"), canaryOf(tenantA, "long", "6s"),
		canaryOf(tenantA, "waiting-1", "1s"), canaryOf(tenantA, "waiting-2", "1s"), canaryOf(tenantB, "app", "1s")} {
		if err := env.Client.Create(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	initialized := func(c *sluicev1.Canary) bool { return c.Status.Phase == sluicev1.CanaryPhaseInitialized }
	for _, n := range apps {
		waitFor(t, tenantA, n, 30*time.Second, n+" Initialized", initialized)
	}
	waitFor(t, tenantB, "app", 30*time.Second, "tenant b's Canary Initialized", initialized)

	running := func(c *sluicev1.Canary) bool { return runningPhases[c.Status.Phase] }
	inLine := func(c *sluicev1.Canary) bool { return c.Status.Phase == sluicev1.CanaryPhaseWaiting && heldByCap(c) }
	for _, n := range []string{"short", "long"} {
		bump(t, tenantA, n, "app:2")
		waitFor(t, tenantA, n, 30*time.Second, n+" running", running)
	}
	for _, n := range []string{"waiting-1", "waiting-2"} {
		bump(t, tenantA, n, "app:2")
		waitFor(t, tenantA, n, 30*time.Second, n+" in line", inLine)
	}
	bump(t, tenantB, "app", "app:2")
	waitFor(t, tenantB, "app", 30*time.Second, "tenant b's run in line", inLine)

	succeeded := func(c *sluicev1.Canary) bool { return c.Status.Phase == sluicev1.CanaryPhaseSucceeded }
	b := waitFor(t, tenantB, "app", 60*time.Second, "tenant b's run delivered", succeeded)
	for _, n := range []string{"waiting-1", "waiting-2"} {
		a := waitFor(t, tenantA, n, 90*time.Second, n+" delivered", succeeded)
		if !b.Status.RunStartTime.Before(a.Status.RunStartTime) {
			t.Errorf("tenant a's %s started at %s, before tenant b's run (%s), which waited with no run in flight while a held a slot",
				n, a.Status.RunStartTime.Format(time.RFC3339), b.Status.RunStartTime.Format(time.RFC3339))
		}
	}
	if long := waitFor(t, tenantA, "long", 90*time.Second, "the long run delivered", succeeded); !long.Status.LastTransitionTime.After(b.Status.RunStartTime.Time) {
		t.Errorf("the long run ended at %s, before tenant b's run started (%s): the test did not hold a's slot while b waited",
			long.Status.LastTransitionTime.Format(time.RFC3339), b.Status.RunStartTime.Format(time.RFC3339))
	}
}
