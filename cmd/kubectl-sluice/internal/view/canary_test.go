package view

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// TestHolds names what holds a run, in order: a gate, a pause, a stall, then the reason the
// Ready condition gives while a run waits or is in flight; nothing once a run ended or while it
// simply progresses.
func TestHolds(t *testing.T) {
	ready := func(reason, msg string) metav1.Condition {
		return metav1.Condition{Type: sluicev1.ConditionReady, Status: metav1.ConditionUnknown, Reason: reason, Message: msg}
	}
	stalled := metav1.Condition{Type: sluicev1.ConditionStalled, Status: metav1.ConditionTrue, Reason: sluicev1.ReasonTargetNotFound, Message: "target deployment web not found"}
	for _, tc := range []struct {
		name    string
		phase   sluicev1.CanaryPhase
		suspend bool
		hooks   []sluicev1.CanaryWebhook
		conds   []metav1.Condition
		want    string // "reason: message", "" for none
	}{
		{name: "progressing", phase: sluicev1.CanaryPhaseProgressing, conds: []metav1.Condition{ready(sluicev1.ReasonProgressing, "at 20")}},
		{name: "a manual gate", phase: sluicev1.CanaryPhaseWaitingPromotion, suspend: true,
			hooks: []sluicev1.CanaryWebhook{{Name: "approve", Type: sluicev1.WebhookConfirmPromotion, Manual: true}},
			want:  "Gate: confirm-promotion gate: approve (manual: approve with `kubectl sluice promote`)"},
		{name: "paused", phase: sluicev1.CanaryPhaseProgressing, suspend: true, conds: []metav1.Condition{stalled},
			want: "Suspended: paused: spec.suspend is true (`kubectl sluice resume` continues)"},
		{name: "stalled", phase: sluicev1.CanaryPhaseSucceeded, conds: []metav1.Condition{stalled}, want: "TargetNotFound: target deployment web not found"},
		{name: "a closed window", phase: sluicev1.CanaryPhaseWaiting, conds: []metav1.Condition{ready(sluicev1.ReasonOutsideWindow, "opens at 09:00")},
			want: "OutsideWindow: opens at 09:00"},
		{name: "ended", phase: sluicev1.CanaryPhaseFailed, conds: []metav1.Condition{ready(sluicev1.ReasonRolledBack, "rolled back")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cn := &sluicev1.Canary{Spec: sluicev1.CanarySpec{Suspend: tc.suspend, Analysis: sluicev1.CanaryAnalysis{Webhooks: tc.hooks}},
				Status: sluicev1.CanaryStatus{Phase: tc.phase, Conditions: tc.conds}}
			got := ""
			if h := Holds(cn); h != nil {
				got = h.Reason + ": " + h.Message
			}
			if got != tc.want {
				t.Errorf("Holds = %q, want %q", got, tc.want)
			}
		})
	}
}
