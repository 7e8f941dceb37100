package reconcilekit

import (
	"context"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/test/testenv"
)

// TestShowsOwnWrite: only the very version our last status patch produced counts as current
// without a read: not the version it was based on, not a later write by someone else, not
// anything after the memory is lost (restart) or the object forgotten.
func TestShowsOwnWrite(t *testing.T) {
	testenv.Require(t, env)
	ctx := context.Background()
	obj := newCanary(t, env.Namespace(t))
	clock := clocktesting.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	kit := Kit{Client: env.Client, Clock: clock, Writes: &WriteLog{}}
	if kit.ShowsOwnWrite(obj) {
		t.Fatal("a version this controller never wrote counts as its own")
	}
	readAt := obj.ResourceVersion
	tick, _ := kit.Begin(obj)
	obj.Status.Phase = sluicev1.CanaryPhaseInitializing
	if _, err := tick.End(ctx, ctrl.Result{}, nil); err != nil {
		t.Fatal(err)
	}
	if !kit.ShowsOwnWrite(obj) {
		t.Fatalf("the version our patch produced (%s) does not count as our own", obj.ResourceVersion)
	}
	before := obj.DeepCopy()
	before.ResourceVersion = readAt
	if kit.ShowsOwnWrite(before) {
		t.Fatal("the version our patch was based on counts as current")
	}
	// Past the memory of Begin's wait, the log still knows the version it produced.
	clock.Step(2 * OwnWriteMemory)
	if _, ok := kit.Begin(obj); !ok || !kit.ShowsOwnWrite(obj) {
		t.Fatalf("after Begin accepted our version, ShowsOwnWrite=%v", kit.ShowsOwnWrite(obj))
	}
	// Someone else writes: that version is not ours.
	obj.Labels = map[string]string{"edited": "by-user"}
	if err := env.Client.Update(ctx, obj); err != nil {
		t.Fatal(err)
	}
	if kit.ShowsOwnWrite(obj) {
		t.Fatal("a version written by someone else counts as our own")
	}
	// A restarted controller (empty log) and a forgotten object know nothing.
	if (Kit{Writes: &WriteLog{}}).ShowsOwnWrite(obj) {
		t.Fatal("an empty write log vouches for a version")
	}
	kit.Writes.Forget(obj)
	if kit.ShowsOwnWrite(obj) {
		t.Fatal("a forgotten object still counts as written")
	}
}
