package reconcilekit

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// TestDeliveriesNeverBlockTheCaller: with every slot taken by a delivery that hangs, Go still
// returns at once (the reconcile goes on), queued deliveries run once slots free up, and a
// stopping manager (Start returning) waits for all of them.
func TestDeliveriesNeverBlockTheCaller(t *testing.T) {
	var d Deliveries
	release := make(chan struct{})
	var done atomic.Int32
	start := time.Now()
	for i := 0; i < 3*maxDeliveries; i++ {
		d.Go(func() {
			<-release
			done.Add(1)
		})
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("queuing %d deliveries behind hanging ones took %s", 3*maxDeliveries, took)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { _ = d.Start(ctx); close(stopped) }()
	cancel()
	select {
	case <-stopped:
		t.Fatal("Start returned while deliveries were still running")
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("Start did not return once the deliveries finished")
	}
	if n := done.Load(); n != 3*maxDeliveries {
		t.Fatalf("%d deliveries ran, want %d", n, 3*maxDeliveries)
	}
}
