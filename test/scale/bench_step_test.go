package scale

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// BenchmarkReconcileStep measures one full step of a run: the Reconcile of a Progressing Canary
// whose check is due, which runs the check (no metrics: nothing to query), writes the route's new
// weights and patches the status. It goes through the same wiring as BenchmarkReconcileIdle; the
// clock is a fake one moved by an interval before each op, and between ops (timer stopped) the
// benchmark waits until the cache shows the step's status, as the next tick of a real run would
// find it an interval later. Every op is checked to have advanced the weight by one. Steps of 1
// up to 99 give 98 ops per run; then the status is set back to weight 1 (timer stopped) and the
// route repaired by a tick of the controller. requests/op counts the API requests of an op
// (the route write and the status patch: 2).
func BenchmarkReconcileStep(b *testing.B) {
	const interval = 10 * time.Second
	clk := clocktesting.NewFakeClock(time.Now())
	bc := newBenchCanary(b, interval, clk, func(cn *sluicev1.Canary) {
		cn.Spec.Analysis.StepWeight, cn.Spec.Analysis.MaxWeight = 1, 99
	})
	bc.initialize(b)
	if err := setImage(bc.ctx, env.Client, bc.req.Namespace, bc.req.Name, "ghcr.io/stefanprodan/podinfo:6.0.1"); err != nil {
		b.Fatal(err)
	}
	// Tick (the clock moving a second at a time) until the run took its first weight.
	if err := wait.PollUntilContextTimeout(bc.ctx, 20*time.Millisecond, 30*time.Second, true, func(ctxWait context.Context) (bool, error) {
		clk.Step(time.Second)
		bc.reconcile(b)
		cn := bc.live(b)
		return cn.Status.Phase == sluicev1.CanaryPhaseProgressing && cn.Status.CanaryWeight >= 1, nil
	}); err != nil {
		b.Fatalf("the run did not take its first step: %+v", bc.live(b).Status)
	}

	b.ReportAllocs()
	ops, requests := 0, 0
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		before := bc.live(b)
		if before.Status.CanaryWeight >= 99 {
			bc.rewind(b, before)
			before = bc.live(b)
		}
		bc.cacheShows(b, before.ResourceVersion)
		clk.Step(interval)
		_ = bc.counter.take()
		b.StartTimer()

		bc.reconcile(b)

		b.StopTimer()
		requests += bc.counter.take().total()
		if after := bc.live(b); after.Status.CanaryWeight != before.Status.CanaryWeight+1 || after.Status.Phase != sluicev1.CanaryPhaseProgressing {
			b.Fatalf("op %d did not step: weight %d -> %d, phase %s", ops, before.Status.CanaryWeight, after.Status.CanaryWeight, after.Status.Phase)
		}
		ops++
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(requests)/float64(ops), "requests/op")
}

// rewind sets the run back to weight 1 (status patch around the controller), then lets the
// controller repair the route (a tick without a step due), and waits for the cache.
func (bc *benchCanary) rewind(b *testing.B, cn *sluicev1.Canary) {
	patch := client.MergeFrom(cn.DeepCopy())
	cn.Status.CanaryWeight = 1
	if err := env.Client.Status().Patch(bc.ctx, cn, patch); err != nil {
		b.Fatal(err)
	}
	bc.cacheShows(b, cn.ResourceVersion)
	bc.reconcile(b)
	if cn := bc.live(b); cn.Status.CanaryWeight != 1 || cn.Status.Phase != sluicev1.CanaryPhaseProgressing {
		b.Fatalf("rewind: weight %d, phase %s", cn.Status.CanaryWeight, cn.Status.Phase)
	}
}
