package reconcilekit

import (
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// SetCondition sets condition typ with the object's generation as its observedGeneration.
func SetCondition(obj Object, typ string, status metav1.ConditionStatus, reason, msg string) {
	conds := obj.GetConditions()
	apimeta.SetStatusCondition(&conds, metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: obj.GetGeneration(),
	})
	obj.SetConditions(conds)
}

// RemoveCondition drops condition typ.
func RemoveCondition(obj Object, typ string) {
	conds := obj.GetConditions()
	if apimeta.RemoveStatusCondition(&conds, typ) {
		obj.SetConditions(conds)
	}
}

// FindCondition returns condition typ, or nil.
func FindCondition(obj Object, typ string) *metav1.Condition {
	return apimeta.FindStatusCondition(obj.GetConditions(), typ)
}

// Summary is what a controller's phase means for the summary conditions Ready and Reconciling.
type Summary struct {
	// Ready is the status of Ready: True in a good steady state, False after a failure, Unknown
	// while work is in flight or pending.
	Ready metav1.ConditionStatus
	// Reason and Message of Ready (and of Reconciling).
	Reason, Message string
	// Reconciling is true while work is pending or in flight: Reconciling=True with Reason and
	// ReconcilingMessage (Message when empty). Otherwise the Reconciling condition is removed
	// ("abnormal-true": present only while it holds).
	Reconciling        bool
	ReconcilingMessage string
}

// SetSummary sets Ready and Reconciling from s.
func SetSummary(obj Object, s Summary) {
	SetCondition(obj, sluicev1.ConditionReady, s.Ready, s.Reason, s.Message)
	if !s.Reconciling {
		RemoveCondition(obj, sluicev1.ConditionReconciling)
		return
	}
	msg := s.ReconcilingMessage
	if msg == "" {
		msg = s.Message
	}
	SetCondition(obj, sluicev1.ConditionReconciling, metav1.ConditionTrue, s.Reason, msg)
}

// MarkStalled sets Stalled=True and Ready=False with reason and msg. It reports whether Stalled
// changed, so the caller records its event once.
func MarkStalled(obj Object, reason, msg string) bool {
	prev := FindCondition(obj, sluicev1.ConditionStalled)
	changed := prev == nil || prev.Status != metav1.ConditionTrue || prev.Reason != reason || prev.Message != msg
	SetCondition(obj, sluicev1.ConditionStalled, metav1.ConditionTrue, reason, msg)
	SetCondition(obj, sluicev1.ConditionReady, metav1.ConditionFalse, reason, msg)
	return changed
}

// ClearStalled removes Stalled after a tick that made progress.
func ClearStalled(obj Object) { RemoveCondition(obj, sluicev1.ConditionStalled) }

// MarkWaiting records why the object waits without being stalled: Ready=False and
// Reconciling=True with reason and msg.
func MarkWaiting(obj Object, reason, msg string) {
	SetSummary(obj, Summary{Ready: metav1.ConditionFalse, Reason: reason, Message: msg, Reconciling: true})
}

// MarkSuspended sets Reconciling=False with reason Suspended and msg (say what stays as it is).
// It reports whether the object just became suspended, so the caller records its event once.
func MarkSuspended(obj Object, msg string) bool {
	was := IsSuspended(obj)
	SetCondition(obj, sluicev1.ConditionReconciling, metav1.ConditionFalse, sluicev1.ReasonSuspended, msg)
	return !was
}

// IsSuspended reports whether the conditions say reconciliation is suspended.
func IsSuspended(obj Object) bool {
	c := FindCondition(obj, sluicev1.ConditionReconciling)
	return c != nil && c.Reason == sluicev1.ReasonSuspended
}

// Resume drops the Suspended mark; it reports whether the object was suspended, so the caller
// records the resume once.
func Resume(obj Object) bool {
	if !IsSuspended(obj) {
		return false
	}
	RemoveCondition(obj, sluicev1.ConditionReconciling)
	return true
}
