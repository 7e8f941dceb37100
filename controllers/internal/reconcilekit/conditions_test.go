package reconcilekit

import (
	"errors"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

func TestMarkStalledReportsChangeOnce(t *testing.T) {
	c := &sluicev1.Canary{ObjectMeta: metav1.ObjectMeta{Generation: 3}}
	if !MarkStalled(c, sluicev1.ReasonInvalidSpec, "bad interval") {
		t.Fatal("first MarkStalled reported no change")
	}
	if MarkStalled(c, sluicev1.ReasonInvalidSpec, "bad interval") {
		t.Fatal("the same stall again reported a change (the event would repeat)")
	}
	if !MarkStalled(c, sluicev1.ReasonInvalidSpec, "another cause") {
		t.Fatal("a new message reported no change")
	}
	for _, typ := range []string{sluicev1.ConditionStalled, sluicev1.ConditionReady} {
		cond := FindCondition(c, typ)
		if cond == nil || cond.Reason != sluicev1.ReasonInvalidSpec || cond.Message != "another cause" || cond.ObservedGeneration != 3 {
			t.Fatalf("%s = %+v", typ, cond)
		}
	}
	if s := FindCondition(c, sluicev1.ConditionReady).Status; s != metav1.ConditionFalse {
		t.Fatalf("Ready = %s, want False", s)
	}
	ClearStalled(c)
	if FindCondition(c, sluicev1.ConditionStalled) != nil {
		t.Fatal("Stalled survived ClearStalled")
	}
}

func TestSuspendAndResume(t *testing.T) {
	pu := &sluicev1.DataPlane{}
	if !MarkSuspended(pu, "suspended") || MarkSuspended(pu, "suspended") {
		t.Fatal("MarkSuspended must report only the first suspension")
	}
	if cond := FindCondition(pu, sluicev1.ConditionReconciling); cond.Status != metav1.ConditionFalse || cond.Reason != sluicev1.ReasonSuspended {
		t.Fatalf("Reconciling = %+v", cond)
	}
	if !Resume(pu) || Resume(pu) {
		t.Fatal("Resume must report only the first resume")
	}
	if FindCondition(pu, sluicev1.ConditionReconciling) != nil {
		t.Fatal("Reconciling=Suspended survived Resume")
	}
}

func TestSetSummary(t *testing.T) {
	c := &sluicev1.Canary{}
	SetSummary(c, Summary{Ready: metav1.ConditionUnknown, Reason: "Progressing", Message: "at 10", Reconciling: true})
	if r := FindCondition(c, sluicev1.ConditionReconciling); r == nil || r.Status != metav1.ConditionTrue || r.Message != "at 10" {
		t.Fatalf("Reconciling = %+v", r)
	}
	SetSummary(c, Summary{Ready: metav1.ConditionUnknown, Reason: "Initializing", Message: "m", Reconciling: true, ReconcilingMessage: "r"})
	if r := FindCondition(c, sluicev1.ConditionReconciling); r.Message != "r" || FindCondition(c, sluicev1.ConditionReady).Message != "m" {
		t.Fatalf("ReconcilingMessage not used: %+v", c.Status.Conditions)
	}
	SetSummary(c, Summary{Ready: metav1.ConditionTrue, Reason: "Succeeded", Message: "done"})
	if FindCondition(c, sluicev1.ConditionReconciling) != nil {
		t.Fatal("Reconciling kept in a steady state")
	}
	if r := FindCondition(c, sluicev1.ConditionReady); r.Status != metav1.ConditionTrue || r.Reason != "Succeeded" {
		t.Fatalf("Ready = %+v", r)
	}
}

func TestStalledKeepsTheCause(t *testing.T) {
	cause := errors.New("route not found")
	err := fmt.Errorf("reconciling: %w", Stalled(sluicev1.ReasonRouteError, "route web: %w", cause))
	st, ok := AsStalled(err)
	if !ok || st.Reason != sluicev1.ReasonRouteError || !errors.Is(err, cause) || st.Error() != "route web: route not found" {
		t.Fatalf("AsStalled(%v) = %+v, %v", err, st, ok)
	}
	if _, ok := AsStalled(cause); ok {
		t.Fatal("a plain error is not stalled")
	}
}

func TestFirstNotice(t *testing.T) {
	var keys []string
	if !FirstNotice(&keys, "a") || FirstNotice(&keys, "a") || !FirstNotice(&keys, "b") || len(keys) != 2 {
		t.Fatalf("keys %v", keys)
	}
}
