package dataplane

import (
	"strings"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/dataplane/waves"
)

func TestSetConditions(t *testing.T) {
	bake := metav1.NewTime(time.Date(2026, 11, 30, 12, 5, 0, 0, time.UTC))
	wave := func(p sluicev1.WavePhase) []sluicev1.DataPlaneWave {
		return []sluicev1.DataPlaneWave{
			{Namespaces: []string{"ns-1"}, Phase: sluicev1.WaveSucceeded},
			{Namespaces: []string{"ns-2", "ns-3"}, Phase: p, Desired: 12, Current: 5, BakeStartedAt: &bake, FailedChecks: 1},
		}
	}
	type cond struct {
		status  metav1.ConditionStatus
		reason  string
		message string
	}
	for _, tc := range []struct {
		name        string
		status      sluicev1.DataPlaneStatus
		hold        *waves.Hold
		ready       cond
		reconciling *cond
	}{
		{"restarting", sluicev1.DataPlaneStatus{Phase: sluicev1.DataPlaneProgressing, Version: "edge-26.8.3", CurrentWave: 1, Waves: wave(sluicev1.WaveRestarting)}, nil,
			cond{metav1.ConditionUnknown, sluicev1.ReasonWaveRestarting, "Wave 1 of 1 (ns-2, ns-3) restarting: 5 of 12 meshed pods on edge-26.8.3"},
			&cond{metav1.ConditionTrue, sluicev1.ReasonWaveRestarting, "Wave 1 of 1 (ns-2, ns-3) restarting: 5 of 12 meshed pods on edge-26.8.3"}},
		{"baking", sluicev1.DataPlaneStatus{Phase: sluicev1.DataPlaneProgressing, Version: "edge-26.8.3", CurrentWave: 1, Waves: wave(sluicev1.WaveBaking)}, nil,
			cond{metav1.ConditionUnknown, sluicev1.ReasonWaveBaking, "Wave 1 of 1 (ns-2, ns-3) baking on edge-26.8.3 since 2026-11-30T12:05:00Z, 1 failed checks"},
			&cond{metav1.ConditionTrue, sluicev1.ReasonWaveBaking, "Wave 1 of 1 (ns-2, ns-3) baking on edge-26.8.3 since 2026-11-30T12:05:00Z, 1 failed checks"}},
		{"outside the window", sluicev1.DataPlaneStatus{Phase: sluicev1.DataPlaneWaiting, Version: "edge-26.8.3", Waves: wave(sluicev1.WavePending)},
			&waves.Hold{Reason: sluicev1.ReasonOutsideWindow, Message: "Wave 1 waits outside the upgrade windows; the next window opens at 2026-12-01T03:00:00Z"},
			cond{metav1.ConditionUnknown, sluicev1.ReasonOutsideWindow, "Wave 1 waits outside the upgrade windows; the next window opens at 2026-12-01T03:00:00Z"},
			&cond{metav1.ConditionTrue, sluicev1.ReasonOutsideWindow, "Wave 1 waits outside the upgrade windows; the next window opens at 2026-12-01T03:00:00Z"}},
		{"up to date", sluicev1.DataPlaneStatus{Phase: sluicev1.DataPlaneUpToDate, Version: "edge-26.8.3", Desired: 36, Current: 36,
			ControlPlane: sluicev1.ControlPlaneStatus{Ready: true}}, nil,
			cond{metav1.ConditionTrue, sluicev1.ReasonUpToDate, "36 of 36 meshed pods run edge-26.8.3"}, nil},
		{"rolled back keeps the root cause", func() sluicev1.DataPlaneStatus {
			s := sluicev1.DataPlaneStatus{Phase: sluicev1.DataPlaneRolledBack, Version: "edge-26.8.3", CurrentWave: 1, Waves: wave(sluicev1.WaveRolledBack)}
			s.Waves[1].Reason, s.Waves[1].Message = sluicev1.ReasonAnalysisFailed, "failed checks threshold reached (2): ns-3: fleet-health: Fail, value 0.00"
			return s
		}(), nil,
			cond{metav1.ConditionFalse, sluicev1.ReasonAnalysisFailed,
				"Wave 1 (ns-2, ns-3) was rolled back; later waves did not start: failed checks threshold reached (2): ns-3: fleet-health: Fail, value 0.00"}, nil},
		{"failed rollback keeps the root cause", func() sluicev1.DataPlaneStatus {
			s := sluicev1.DataPlaneStatus{Phase: sluicev1.DataPlaneFailed, Version: "edge-26.8.3", CurrentWave: 1, Waves: wave(sluicev1.WaveFailed)}
			s.Waves[1].Reason = sluicev1.ReasonProgressDeadline
			s.Waves[1].Message = "eviction of pod ns-2/db-1 (StatefulSet db) refused by PodDisruptionBudget ns-2/db (0 disruptions allowed, 1 of 2 pods healthy)"
			return s
		}(), nil,
			cond{metav1.ConditionFalse, sluicev1.ReasonProgressDeadline,
				"Wave 1 (ns-2, ns-3) failed; later waves did not start: eviction of pod ns-2/db-1 (StatefulSet db) refused by PodDisruptionBudget ns-2/db (0 disruptions allowed, 1 of 2 pods healthy)"}, nil},
		{"incomplete names the unmanaged pods", sluicev1.DataPlaneStatus{Phase: sluicev1.DataPlaneIncomplete, Version: "edge-26.8.3", Desired: 13, Current: 12,
			UnmanagedPods: []string{"ns-1/debug"}}, nil,
			cond{metav1.ConditionFalse, sluicev1.ReasonUnmanagedPods,
				"Every wave succeeded; 12 of 13 meshed pods run edge-26.8.3; pods Sluice cannot restart run another version: ns-1/debug"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dp := &sluicev1.DataPlane{Status: tc.status}
			dp.Status.Conditions = []metav1.Condition{{Type: sluicev1.ConditionReconciling, Status: metav1.ConditionTrue, Reason: "x"}}
			setConditions(dp, &waves.Decision{Hold: tc.hold})
			check := func(typ string, want *cond) {
				got := apimeta.FindStatusCondition(dp.Status.Conditions, typ)
				switch {
				case want == nil && got != nil:
					t.Errorf("%s present: %+v", typ, got)
				case want != nil && (got == nil || got.Status != want.status || got.Reason != want.reason || got.Message != want.message):
					t.Errorf("%s = %+v, want %+v", typ, got, want)
				}
			}
			check(sluicev1.ConditionReady, &tc.ready)
			check(sluicev1.ConditionReconciling, tc.reconciling)
		})
	}
}

func TestNamespacesSkipped(t *testing.T) {
	dp := &sluicev1.DataPlane{}
	dp.Status = sluicev1.DataPlaneStatus{Phase: sluicev1.DataPlaneProgressing, Skipped: []sluicev1.SkippedNamespace{
		{Namespace: "legacy", Reason: sluicev1.ReasonIstioInjectionLabel, Message: "namespace legacy has istio-injection=enabled"}}}
	setConditions(dp, &waves.Decision{})
	c := apimeta.FindStatusCondition(dp.Status.Conditions, sluicev1.ConditionNamespacesSkipped)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != sluicev1.ReasonIstioInjectionLabel || c.Message != "namespace legacy has istio-injection=enabled" {
		t.Fatalf("NamespacesSkipped %+v", c)
	}
	dp.Status.Skipped = nil
	setConditions(dp, &waves.Decision{})
	if apimeta.FindStatusCondition(dp.Status.Conditions, sluicev1.ConditionNamespacesSkipped) != nil {
		t.Fatal("NamespacesSkipped kept without skipped namespaces")
	}
}

// TestAbnormalConditions: ControlPlaneNotReady names what is missing with the version seen;
// Blocked names the pod and the PodDisruptionBudget and is an event once per change; Drifted and
// UnmanagedPods name the pods; each goes away with its cause.
func TestAbnormalConditions(t *testing.T) {
	dp := &sluicev1.DataPlane{Status: sluicev1.DataPlaneStatus{Phase: sluicev1.DataPlaneProgressing, Version: "edge-26.8.3",
		ControlPlane:  sluicev1.ControlPlaneStatus{Version: "edge-26.6.3", Message: "Linkerd control plane is not ready for edge-26.8.3: linkerd/linkerd-destination runs edge-26.6.3, not edge-26.8.3"},
		UnmanagedPods: []string{"ns-1/debug"}}}
	block := waves.Blocker{Namespace: "ns-1", Reason: sluicev1.ReasonEvictionBlocked,
		Message: "eviction of pod ns-1/db-1 (StatefulSet db) refused by PodDisruptionBudget ns-1/db (0 disruptions allowed, 1 of 2 pods healthy)"}
	events := setConditions(dp, &waves.Decision{Blockers: []waves.Blocker{block}})
	events = append(events, setConditions(dp, &waves.Decision{Blockers: []waves.Blocker{block}})...) // the same block: no second event
	get := func(typ string) *metav1.Condition { return apimeta.FindStatusCondition(dp.Status.Conditions, typ) }
	if c := get(sluicev1.ConditionControlPlaneNotReady); c == nil || c.Message !=
		"Linkerd control plane is not ready for edge-26.8.3: linkerd/linkerd-destination runs edge-26.6.3, not edge-26.8.3 (control plane seen at edge-26.6.3)" {
		t.Errorf("ControlPlaneNotReady %+v", c)
	}
	if c := get(sluicev1.ConditionBlocked); c == nil || c.Reason != sluicev1.ReasonEvictionBlocked || c.Message != block.Message {
		t.Errorf("Blocked %+v", c)
	}
	if len(events) != 1 || events[0].Reason != sluicev1.ReasonEvictionBlocked || events[0].Type != "Warning" {
		t.Errorf("events %+v", events)
	}
	if c := get(sluicev1.ConditionUnmanagedPods); c == nil || !strings.Contains(c.Message, "ns-1/debug") {
		t.Errorf("UnmanagedPods %+v", c)
	}
	dp.Status.Phase, dp.Status.DriftedPods = sluicev1.DataPlaneDrifted, []string{"ns-2/web-1"}
	dp.Status.ControlPlane, dp.Status.UnmanagedPods = sluicev1.ControlPlaneStatus{Ready: true, Version: "edge-26.8.3"}, nil
	setConditions(dp, &waves.Decision{})
	if c := get(sluicev1.ConditionDrifted); c == nil || !strings.Contains(c.Message, "ns-2/web-1") {
		t.Errorf("Drifted %+v", c)
	}
	for _, typ := range []string{sluicev1.ConditionControlPlaneNotReady, sluicev1.ConditionBlocked, sluicev1.ConditionUnmanagedPods} {
		if c := get(typ); c != nil {
			t.Errorf("%s kept after its cause went: %+v", typ, c)
		}
	}
}
