package dataplane

import (
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
		{"restarting", sluicev1.DataPlaneStatus{Phase: sluicev1.DataPlaneProgressing, Target: "edge-26.8.3", CurrentWave: 1, Waves: wave(sluicev1.WaveRestarting)}, nil,
			cond{metav1.ConditionUnknown, sluicev1.ReasonWaveRestarting, "Wave 1 of 1 (ns-2, ns-3) restarting: 5 of 12 running meshed pods on edge-26.8.3"},
			&cond{metav1.ConditionTrue, sluicev1.ReasonWaveRestarting, "Wave 1 of 1 (ns-2, ns-3) restarting: 5 of 12 running meshed pods on edge-26.8.3"}},
		{"baking", sluicev1.DataPlaneStatus{Phase: sluicev1.DataPlaneProgressing, Target: "edge-26.8.3", CurrentWave: 1, Waves: wave(sluicev1.WaveBaking)}, nil,
			cond{metav1.ConditionUnknown, sluicev1.ReasonWaveBaking, "Wave 1 of 1 (ns-2, ns-3) baking on edge-26.8.3 since 2026-11-30T12:05:00Z, 1 failed checks"},
			&cond{metav1.ConditionTrue, sluicev1.ReasonWaveBaking, "Wave 1 of 1 (ns-2, ns-3) baking on edge-26.8.3 since 2026-11-30T12:05:00Z, 1 failed checks"}},
		{"outside the window", sluicev1.DataPlaneStatus{Phase: sluicev1.DataPlaneWaiting, Target: "edge-26.8.3", Waves: wave(sluicev1.WavePending)},
			&waves.Hold{Reason: sluicev1.ReasonOutsideWindow, Message: "Wave 1 waits outside the upgrade windows; the next window opens at 2026-12-01T03:00:00Z"},
			cond{metav1.ConditionUnknown, sluicev1.ReasonOutsideWindow, "Wave 1 waits outside the upgrade windows; the next window opens at 2026-12-01T03:00:00Z"},
			&cond{metav1.ConditionTrue, sluicev1.ReasonOutsideWindow, "Wave 1 waits outside the upgrade windows; the next window opens at 2026-12-01T03:00:00Z"}},
		{"succeeded", sluicev1.DataPlaneStatus{Phase: sluicev1.DataPlaneUpToDate, Target: "edge-26.8.3", Desired: 36, Current: 36}, nil,
			cond{metav1.ConditionTrue, sluicev1.ReasonSucceeded, "36 of 36 running meshed pods run edge-26.8.3"}, nil},
		{"failed", sluicev1.DataPlaneStatus{Phase: sluicev1.DataPlaneRolledBack, Target: "edge-26.8.3", CurrentWave: 1, Waves: wave(sluicev1.WaveRolledBack),
			Analysis: []sluicev1.NamespaceMetricResult{{Namespace: "ns-3", MetricResult: sluicev1.MetricResult{Name: "fleet-health", Verdict: sluicev1.VerdictFail, Value: "0.00"}}}}, nil,
			cond{metav1.ConditionFalse, sluicev1.ReasonRolledBack, "Wave 1 (ns-2, ns-3) was rolled back; later waves did not start: failing checks: ns-3 fleet-health Fail 0.00"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dp := &sluicev1.DataPlane{Status: tc.status}
			dp.Status.Conditions = []metav1.Condition{{Type: sluicev1.ConditionReconciling, Status: metav1.ConditionTrue, Reason: "x"}}
			setConditions(dp, tc.hold)
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

func TestStalledAndSkipped(t *testing.T) {
	dp := &sluicev1.DataPlane{}
	if !markStalled(dp, sluicev1.ReasonInvalidSpec, "bad") || markStalled(dp, sluicev1.ReasonInvalidSpec, "bad") {
		t.Fatal("markStalled must report a change exactly once")
	}
	clearStalled(dp)
	if apimeta.FindStatusCondition(dp.Status.Conditions, sluicev1.ConditionStalled) != nil {
		t.Fatal("Stalled not cleared")
	}
	dp.Status = sluicev1.DataPlaneStatus{Phase: sluicev1.DataPlaneProgressing, Skipped: []sluicev1.SkippedNamespace{
		{Namespace: "legacy", Reason: sluicev1.ReasonIstioInjectionLabel, Message: "namespace legacy has istio-injection=enabled"}}}
	setConditions(dp, nil)
	c := apimeta.FindStatusCondition(dp.Status.Conditions, sluicev1.ConditionNamespacesSkipped)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != sluicev1.ReasonIstioInjectionLabel || c.Message != "namespace legacy has istio-injection=enabled" {
		t.Fatalf("NamespacesSkipped %+v", c)
	}
	dp.Status.Skipped = nil
	setConditions(dp, nil)
	if apimeta.FindStatusCondition(dp.Status.Conditions, sluicev1.ConditionNamespacesSkipped) != nil {
		t.Fatal("NamespacesSkipped kept without skipped namespaces")
	}
}
