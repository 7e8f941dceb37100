package reconcilekit

import (
	"context"
	"sync"
)

// maxDeliveries bounds the notification deliveries of one controller running at once; more wait
// for a slot in their own goroutine, never in a reconcile.
const maxDeliveries = 16

// Deliveries runs a controller's notification deliveries in the background, so a slow or
// unreachable alert provider never holds a reconcile worker (each delivery is bounded by the
// notifier's own timeout). The zero value is ready to use; keep one per controller (a field of
// the Reconciler, passed as Kit.Deliveries) and add it to the manager so a shutdown waits for
// the deliveries in flight.
type Deliveries struct {
	once sync.Once
	slot chan struct{}
	wg   sync.WaitGroup
}

// Go runs f in the background, at most maxDeliveries at once. It never blocks.
func (d *Deliveries) Go(f func()) {
	d.once.Do(func() { d.slot = make(chan struct{}, maxDeliveries) })
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		d.slot <- struct{}{}
		defer func() { <-d.slot }()
		f()
	}()
}

// Wait returns once every delivery started so far has returned.
func (d *Deliveries) Wait() { d.wg.Wait() }

// Start blocks until ctx is done, then waits for the deliveries in flight: with it, Deliveries is
// a controller-runtime manager.Runnable (mgr.Add), and a stopping manager does not drop them.
func (d *Deliveries) Start(ctx context.Context) error {
	<-ctx.Done()
	d.Wait()
	return nil
}

// NeedLeaderElection is false: every replica waits for its own deliveries.
func (d *Deliveries) NeedLeaderElection() bool { return false }
