package reconcilekit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Run(m, &env)) }

// eventLog records events in memory.
type eventLog struct {
	mu     sync.Mutex
	events []string
}

func (e *eventLog) Eventf(_ runtime.Object, _ runtime.Object, eventtype, reason, _ string, note string, args ...interface{}) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.events = append(e.events, fmt.Sprintf("%s %s %s", eventtype, reason, fmt.Sprintf(note, args...)))
}

func (e *eventLog) all() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.events...)
}

func newCanary(t *testing.T, ns string) *sluicev1.Canary {
	t.Helper()
	c := &sluicev1.Canary{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: sluicev1.CanarySpec{TargetRef: sluicev1.TargetReference{Kind: "Deployment", Name: "web"}, Service: sluicev1.CanaryService{Port: 80}}}
	if err := env.Client.Create(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestTickWritesOnceThenDelivers: the status is written in one patch, the events and deferred
// effects come after it in order; the cached copy of that very version is refused by Begin; a
// tick that changes nothing makes no request and still delivers.
func TestTickWritesOnceThenDelivers(t *testing.T) {
	testenv.Require(t, env)
	ctx := context.Background()
	ns := env.Namespace(t)
	obj := newCanary(t, ns)
	rec := &eventLog{}
	writes := &WriteLog{}
	clock := clocktesting.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	kit := Kit{Client: env.Client, Recorder: rec, Clock: clock, Writes: writes}
	if !kit.Now().Equal(clock.Now()) {
		t.Fatal("Kit.Now does not read the clock")
	}
	readAt := obj.ResourceVersion

	tick, ok := kit.Begin(obj)
	if !ok {
		t.Fatal("Begin refused a fresh object")
	}
	var order []string
	obj.Status.Phase = sluicev1.CanaryPhaseInitializing
	tick.Normal("First", "one")
	tick.Defer(func(context.Context) { order = append(order, "deferred after "+fmt.Sprint(len(rec.all()))+" events") })
	tick.Warning("Second", "two")
	res, err := tick.Settle(ctrl.Result{RequeueAfter: time.Second}, nil, time.Minute)
	if err != nil || res.RequeueAfter != time.Second {
		t.Fatalf("Settle(nil) = %v, %v", res, err)
	}
	if _, err := tick.End(ctx, res, nil); err != nil {
		t.Fatal(err)
	}
	if got := rec.all(); len(got) != 2 || got[0] != "Normal First one" || got[1] != "Warning Second two" {
		t.Fatalf("events %q", got)
	}
	if len(order) != 1 || order[0] != "deferred after 2 events" {
		t.Fatalf("deferred effects ran %q, want once after both events", order)
	}
	if obj.ResourceVersion == readAt || obj.Status.ObservedGeneration != obj.Generation {
		t.Fatalf("status not written: rv %s (read at %s), observedGeneration %d", obj.ResourceVersion, readAt, obj.Status.ObservedGeneration)
	}

	// The cache still serving the version the patch was based on: refused, no tick.
	stale := obj.DeepCopy()
	stale.ResourceVersion = readAt
	if _, ok := kit.Begin(stale); ok {
		t.Fatal("Begin accepted the cached copy our own write superseded")
	}
	// The new version: accepted, and a tick that changes nothing sends nothing.
	tick, ok = kit.Begin(obj)
	if !ok {
		t.Fatal("Begin refused the version after our write")
	}
	rv := obj.ResourceVersion
	tick.Normal("Third", "three")
	if _, err := tick.End(ctx, ctrl.Result{}, nil); err != nil || obj.ResourceVersion != rv {
		t.Fatalf("an unchanged status was written (rv %s -> %s, err %v)", rv, obj.ResourceVersion, err)
	}
	if got := rec.all(); len(got) != 3 {
		t.Fatalf("events %q; the unchanged tick's event is missing", got)
	}
}

// TestTickConflictDiscardsOutbox: a tick decided from a stale copy fails its optimistic lock and
// delivers nothing; it is retried shortly without an error.
func TestTickConflictDiscardsOutbox(t *testing.T) {
	testenv.Require(t, env)
	ctx := context.Background()
	obj := newCanary(t, env.Namespace(t))
	stale := obj.DeepCopy()
	obj.Status.Phase = sluicev1.CanaryPhaseInitialized
	if err := env.Client.Status().Update(ctx, obj); err != nil {
		t.Fatal(err)
	}
	rec := &eventLog{}
	kit := Kit{Client: env.Client, Recorder: rec, Writes: &WriteLog{}}
	tick, _ := kit.Begin(stale)
	stale.Status.Phase = sluicev1.CanaryPhaseProgressing
	tick.Normal("Started", "run")
	ran := false
	tick.Defer(func(context.Context) { ran = true })
	res, err := tick.End(ctx, ctrl.Result{}, errors.New("tick error decided from a stale copy"))
	if err != nil || res.RequeueAfter != StaleRetry {
		t.Fatalf("End after a conflict = %v, %v; want a retry after %s and no error", res, err, StaleRetry)
	}
	if ran || len(rec.all()) != 0 {
		t.Fatalf("a discarded tick delivered its outbox: events %q, deferred ran %v", rec.all(), ran)
	}
}

// TestSettleStalledAndTransient: a stall becomes conditions and one event per change with a
// slow retry; a transient error a ReconcileError condition and the error.
func TestSettleStalledAndTransient(t *testing.T) {
	testenv.Require(t, env)
	ctx := context.Background()
	obj := newCanary(t, env.Namespace(t))
	rec := &eventLog{}
	kit := Kit{Client: env.Client, Recorder: rec, Writes: &WriteLog{}}
	for i := 0; i < 2; i++ {
		tick, ok := kit.Begin(obj)
		if !ok { // our own write: read the current version as the cache eventually would
			if err := env.Client.Get(ctx, crclient.ObjectKeyFromObject(obj), obj); err != nil {
				t.Fatal(err)
			}
			if tick, ok = kit.Begin(obj); !ok {
				t.Fatal("Begin refuses the current version")
			}
		}
		res, err := tick.Settle(ctrl.Result{}, fmt.Errorf("step: %w", Stalled(sluicev1.ReasonInvalidSpec, "spec.analysis.interval %q is not a duration", "x")), time.Minute)
		if err != nil || res.RequeueAfter != time.Minute {
			t.Fatalf("Settle(stalled) = %v, %v", res, err)
		}
		if _, err := tick.End(ctx, res, err); err != nil {
			t.Fatal(err)
		}
	}
	if got := rec.all(); len(got) != 1 || got[0] != `Warning InvalidSpec spec.analysis.interval "x" is not a duration` {
		t.Fatalf("events %q; want one warning for the stall", got)
	}
	tick, _ := kit.Begin(obj.DeepCopy())
	cause := errors.New("apiserver unavailable")
	if _, err := tick.Settle(ctrl.Result{}, cause, time.Minute); !errors.Is(err, cause) {
		t.Fatalf("a transient error was swallowed: %v", err)
	}
	if r := FindCondition(tick.obj, sluicev1.ConditionReady); r.Reason != sluicev1.ReasonReconcileError || r.Message != cause.Error() {
		t.Fatalf("Ready = %+v", r)
	}
}
