package canary

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/scheme"
)

// TestNextInLine pins who the free slots go to: each to a run of the namespace with the fewest
// runs in flight (counting the slots already handed out), then to the longest wait.
func TestNextInLine(t *testing.T) {
	at := func(owner string, minute int) waiter {
		ns, name, _ := strings.Cut(owner, "/")
		ts := metav1.NewTime(time.Date(2026, 12, 2, 6, minute, 0, 0, time.UTC))
		return waiter{namespace: ns, name: name, since: &ts}
	}
	tests := []struct {
		name    string
		line    []waiter
		running map[string]int
		free    int
		want    string
	}{
		{
			name: "the longest wait first among equals",
			line: []waiter{at("a/x", 3), at("b/y", 1), at("c/z", 2)},
			free: 3, want: "b/y c/z a/x",
		},
		{
			name:    "a namespace with fewer runs in flight before a longer wait",
			line:    []waiter{at("a/1", 0), at("a/2", 1), at("b/1", 9)},
			running: map[string]int{"a": 1},
			free:    1, want: "b/1",
		},
		{
			name:    "the slots handed out count: round robin across namespaces",
			line:    []waiter{at("a/1", 0), at("a/2", 1), at("a/3", 2), at("b/1", 5), at("b/2", 6)},
			running: map[string]int{},
			free:    4, want: "a/1 b/1 a/2 b/2",
		},
		{
			name:    "one tenant's many revisions wait behind another's one",
			line:    []waiter{at("a/1", 0), at("a/2", 0), at("a/3", 0), at("a/4", 0), at("b/1", 30)},
			running: map[string]int{"a": 2},
			free:    1, want: "b/1",
		},
		{
			name: "no free slot, no one",
			line: []waiter{at("a/1", 0)},
			free: 0, want: "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, w := range nextInLine(tt.line, tt.running, tt.free) {
				got = append(got, w.namespace+"/"+w.name)
			}
			if strings.Join(got, " ") != tt.want {
				t.Errorf("next in line %v, want %s", got, tt.want)
			}
		})
	}
}

// TestSlotsAndLine pins which runs hold a slot of the cap and which stand in line: a suspended
// run holds none, a resumed one stands in line (once the cap is what holds it) until the cap
// admits it again, a promotion counts as soon as it is not suspended.
func TestSlotsAndLine(t *testing.T) {
	capped := []metav1.Condition{{Type: sluicev1.ConditionReady, Status: metav1.ConditionUnknown, Reason: sluicev1.ReasonRolloutCapReached}}
	outside := []metav1.Condition{{Type: sluicev1.ConditionReady, Status: metav1.ConditionUnknown, Reason: sluicev1.ReasonOutsideWindow}}
	tests := []struct {
		name           string
		phase          sluicev1.CanaryPhase
		suspend        bool
		released       bool
		conditions     []metav1.Condition
		holds, waiting bool
	}{
		{name: "a run in flight", phase: sluicev1.CanaryPhaseProgressing, holds: true},
		{name: "a run waiting at the promotion gate", phase: sluicev1.CanaryPhaseWaitingPromotion, holds: true},
		{name: "a suspended run", phase: sluicev1.CanaryPhaseProgressing, suspend: true, released: true},
		{name: "a resumed run not admitted again", phase: sluicev1.CanaryPhaseProgressing, released: true, conditions: capped, waiting: true},
		{name: "a resumed run at the promotion gate", phase: sluicev1.CanaryPhaseWaitingPromotion, released: true, conditions: capped, waiting: true},
		{name: "a resumed run before its first look", phase: sluicev1.CanaryPhaseProgressing, released: true},
		{name: "a resumed run held by a closed window", phase: sluicev1.CanaryPhaseProgressing, released: true, conditions: outside},
		{name: "a suspended promotion", phase: sluicev1.CanaryPhasePromoting, suspend: true},
		{name: "a resumed promotion", phase: sluicev1.CanaryPhasePromoting, holds: true},
		{name: "a new revision held by the cap", phase: sluicev1.CanaryPhaseWaiting, conditions: capped, waiting: true},
		{name: "a new revision held by the cap, then suspended", phase: sluicev1.CanaryPhaseWaiting, conditions: capped, suspend: true},
		{name: "a new revision held by a window", phase: sluicev1.CanaryPhaseWaiting},
		{name: "a run that ended paused", phase: sluicev1.CanaryPhaseFailed, released: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &sluicev1.Canary{Spec: sluicev1.CanarySpec{Suspend: tt.suspend},
				Status: sluicev1.CanaryStatus{Phase: tt.phase, SlotReleased: tt.released, Conditions: tt.conditions}}
			if holdsSlot(c) != tt.holds || inLine(c) != tt.waiting {
				t.Errorf("holds a slot %v, in line %v; want %v, %v", holdsSlot(c), inLine(c), tt.holds, tt.waiting)
			}
		})
	}
}

// TestCapGivesTheSlotToTheNamespaceWithFewerRuns: under a cap of 3, tenant a holds two slots and
// has ten revisions in line since long ago; tenant b's revision joined the line last. The free
// slot is b's: none of a's runs takes it, however often they look, and b's does.
func TestCapGivesTheSlotToTheNamespaceWithFewerRuns(t *testing.T) {
	now := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	inLineSince := func(ns, name string, since time.Time) *sluicev1.Canary {
		ts := metav1.NewTime(since)
		c := &sluicev1.Canary{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Status: sluicev1.CanaryStatus{Phase: sluicev1.CanaryPhaseWaiting, LastTransitionTime: &ts, LastAppliedSpec: "rev-1"}}
		meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: sluicev1.ConditionReady, Status: metav1.ConditionUnknown,
			Reason: sluicev1.ReasonRolloutCapReached})
		return c
	}
	objs := []client.Object{}
	for i := range 2 {
		objs = append(objs, &sluicev1.Canary{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: fmt.Sprintf("running-%d", i)},
			Status: sluicev1.CanaryStatus{Phase: sluicev1.CanaryPhaseProgressing}})
	}
	var waiting []*sluicev1.Canary
	for i := range 10 {
		waiting = append(waiting, inLineSince("a", fmt.Sprintf("waiting-%d", i), now.Add(-time.Hour)))
		objs = append(objs, waiting[i])
	}
	tenantB := inLineSince("b", "app", now.Add(-time.Minute))
	objs = append(objs, tenantB)
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(objs...).
		WithIndex(&sluicev1.Canary{}, indexRunning, indexRunningValue).Build()
	r := &Reconciler{Client: c, Options: Options{MaxProgressing: 3}}
	for _, w := range waiting {
		if ok, err := r.cap.admit(context.Background(), r, w, "rev-2", now); err != nil || ok {
			t.Fatalf("tenant a's %s admitted (%v, %v) while tenant b, with no run in flight, waits: a holds 2 of 3 slots", w.Name, ok, err)
		}
	}
	if ok, err := r.cap.admit(context.Background(), r, tenantB, "rev-2", now); err != nil || !ok {
		t.Fatalf("tenant b's run not admitted (%v, %v): the free slot is its", ok, err)
	}
	for _, w := range waiting {
		if ok, _ := r.cap.admit(context.Background(), r, w, "rev-2", now); ok {
			t.Fatalf("tenant a's %s admitted beyond the cap", w.Name)
		}
	}
}
