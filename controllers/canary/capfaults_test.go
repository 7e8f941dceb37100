package canary

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/test/faults"
)

// TestCapHoldsThroughFaultsAtTheStartOfAWaitingRun: under --max-progressing=1, two new revisions
// wait while a run is in flight; when it ends, the start of the run that takes the slot is
// faulted — the canary's scale-up or the status write that records the start fails, is lost, or
// is followed by a crash (a new controller, whose memory of the runs it admitted is empty). At no
// point are two runs in flight; no waiting Canary's route sends its canary traffic, and none keeps
// its canary's pods up past its own unfaulted tick (scaleDownUnstarted); both waiting revisions
// are delivered (Succeeded, promoted) in the end.
func TestCapHoldsThroughFaultsAtTheStartOfAWaitingRun(t *testing.T) {
	if testing.Short() {
		t.Skip("long: three Canaries through a run each per fault")
	}
	for _, kind := range []faults.Kind{faults.Scale, faults.Status} {
		for _, mode := range []faults.Mode{faults.Fail, faults.Drop, faults.Crash} {
			f := faults.Fault{Kind: kind, N: 1, Mode: mode}
			t.Run(fmt.Sprintf("%s-%s", mode, kind), func(t *testing.T) { capUnderFault(t, f) })
		}
	}
}

func capUnderFault(t *testing.T, fault faults.Fault) {
	first, second, third := newHarness(t), newHarness(t), newHarness(t)
	all := []*harness{first, second, third}
	clock := first.clock
	var fc *faults.Client
	controller := func(c client.Client) *Reconciler { return first.reconciler(c, Options{MaxProgressing: 1}) }
	scoped := namespacedLists{Client: env.Client, namespaces: []string{first.ns, second.ns, third.ns}}
	r := controller(scoped)
	var trail []string
	tick := func(h *harness) time.Duration {
		t.Helper()
		hits := 0
		if fc != nil {
			hits = len(fc.Hit())
		}
		res, err := r.Reconcile(h.ctx, ctrl.Request{NamespacedName: client.ObjectKey{Namespace: h.ns, Name: h.name}})
		faulted := fc != nil && len(fc.Hit()) > hits
		if fc != nil && fc.Crashed() {
			fc.Restart()
			r = controller(fc)
		} else if err != nil && fc == nil {
			t.Fatalf("reconcile %s before the fault: %v", h.ns, err)
		}
		markDeploymentsRolledOut(t, env.Client, h.ns)
		if c := h.canary(); !faulted && err == nil && c.Status.Phase == sluicev1.CanaryPhaseWaiting && *h.deployment("podinfo").Spec.Replicas != 0 {
			t.Fatalf("%s waits to start with its canary at %d replicas\n%s", h.ns, *h.deployment("podinfo").Spec.Replicas, strings.Join(trail, "\n"))
		}
		inFlight := 0
		line := ""
		for i, o := range all {
			c := o.canary()
			if runningPhases[c.Status.Phase] {
				inFlight++
			}
			w, werr := r.Routers[sluicev1.ProviderGatewayAPI].GetRoutes(o.ctx, c)
			if werr == nil && c.Status.Phase == sluicev1.CanaryPhaseWaiting && w.Canary > 0 {
				t.Fatalf("Canary %d waits for the cap while its route sends the canary %d%%\n%s", i+1, w.Canary, strings.Join(trail, "\n"))
			}
			line += fmt.Sprintf("  %d:%s/%d", i+1, c.Status.Phase, w.Canary)
		}
		trail = append(trail, line)
		if inFlight > 1 {
			t.Fatalf("%d runs in flight under a cap of 1 (%s)\n%s", inFlight, fault, strings.Join(trail, "\n"))
		}
		if err != nil || res.RequeueAfter <= 0 || res.RequeueAfter > time.Minute {
			return time.Minute
		}
		return res.RequeueAfter
	}
	until := func(h *harness, phase sluicev1.CanaryPhase) {
		t.Helper()
		for range 40 {
			clock.Step(tick(h))
			if h.canary().Status.Phase == phase {
				return
			}
		}
		t.Fatalf("%s: phase %s, want %s\n%s", h.ns, h.canary().Status.Phase, phase, strings.Join(trail, "\n"))
	}

	for _, h := range all {
		h.app(1, "1")
		h.create(h.canaryFor())
	}
	for _, h := range all {
		until(h, sluicev1.CanaryPhaseInitialized)
	}
	first.setImage("2")
	until(first, sluicev1.CanaryPhaseProgressing)
	for _, h := range []*harness{second, third} {
		h.setImage("2")
		until(h, sluicev1.CanaryPhaseWaiting)
	}
	until(first, sluicev1.CanaryPhaseSucceeded)

	// The slot is free: the next write of the faulted kind is the start of the run that takes it.
	fc = faults.Wrap(scoped, fault)
	r = controller(fc)
	delivered := func(h *harness) bool {
		c := h.canary()
		return c.Status.Phase == sluicev1.CanaryPhaseSucceeded && c.Status.LastPromotedSpec == c.Status.LastAppliedSpec &&
			strings.HasSuffix(h.deployment("podinfo-primary").Spec.Template.Spec.Containers[0].Image, ":2")
	}
	for i := 0; i < 120 && !(delivered(second) && delivered(third)); i++ {
		clock.Step(min(tick(second), tick(third)))
	}
	if len(fc.Hit()) == 0 {
		t.Fatalf("the fault (%s) was never hit\n%s", fault, strings.Join(trail, "\n"))
	}
	for i, h := range []*harness{second, third} {
		if !delivered(h) {
			t.Fatalf("waiting revision %d not delivered after the fault (%s): phase %s\n%s", i+2, fault, h.canary().Status.Phase, strings.Join(trail, "\n"))
		}
	}
}

// namespacedLists lists only in its namespaces, as the cache of a manager started with
// --namespaces does: the cap counts the runs of this test, not those other tests left in flight
// in the shared apiserver.
type namespacedLists struct {
	client.Client
	namespaces []string
}

func (c namespacedLists) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := c.Client.List(ctx, list, opts...); err != nil {
		return err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return err
	}
	kept := slices.DeleteFunc(items, func(o runtime.Object) bool {
		m, err := meta.Accessor(o)
		return err != nil || !slices.Contains(c.namespaces, m.GetNamespace())
	})
	return meta.SetList(list, kept)
}
