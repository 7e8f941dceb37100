package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CanaryPhase is where a Canary is in its lifecycle.
// +kubebuilder:validation:Enum="";Initializing;Initialized;Waiting;Progressing;WaitingPromotion;Promoting;Finalising;Succeeded;Failed;Terminating;Terminated
type CanaryPhase string

// Canary phases, as in Flagger.
const (
	// CanaryPhaseInitializing: the primary objects are being created.
	CanaryPhaseInitializing CanaryPhase = "Initializing"
	// CanaryPhaseInitialized: the primary serves all traffic; no run yet.
	CanaryPhaseInitialized CanaryPhase = "Initialized"
	// CanaryPhaseWaiting: a run is due but held (confirm-rollout gate, window, rollout cap).
	CanaryPhaseWaiting CanaryPhase = "Waiting"
	// CanaryPhaseProgressing: traffic is shifting to the canary step by step under analysis.
	CanaryPhaseProgressing CanaryPhase = "Progressing"
	// CanaryPhaseWaitingPromotion: all steps passed; waiting at the confirm-promotion gate.
	CanaryPhaseWaitingPromotion CanaryPhase = "WaitingPromotion"
	// CanaryPhasePromoting: the primary is being updated to the canary's template and configs.
	CanaryPhasePromoting CanaryPhase = "Promoting"
	// CanaryPhaseFinalising: a new revision arrived once the primary was promoted: traffic is back
	// on the promoted primary and the run completes (Succeeded) in the next tick, then the new
	// revision starts its own run. A promotion without a new revision goes from Promoting to
	// Succeeded in one tick (traffic to the primary, the canary scaled down).
	CanaryPhaseFinalising CanaryPhase = "Finalising"
	// CanaryPhaseSucceeded: the last run was promoted.
	CanaryPhaseSucceeded CanaryPhase = "Succeeded"
	// CanaryPhaseFailed: the last run was rolled back.
	CanaryPhaseFailed CanaryPhase = "Failed"
	// CanaryPhaseTerminating: the Canary is being deleted and the target restored.
	CanaryPhaseTerminating CanaryPhase = "Terminating"
	// CanaryPhaseTerminated: the target is restored; the finalizer is about to go.
	CanaryPhaseTerminated CanaryPhase = "Terminated"
)

// CanaryPhases lists the phases in lifecycle order. A phase's index is its value in the
// sluice_canary_phase metric (Initializing 0 … Terminated 10).
var CanaryPhases = []CanaryPhase{
	CanaryPhaseInitializing, CanaryPhaseInitialized, CanaryPhaseWaiting, CanaryPhaseProgressing,
	CanaryPhaseWaitingPromotion, CanaryPhasePromoting, CanaryPhaseFinalising, CanaryPhaseSucceeded,
	CanaryPhaseFailed, CanaryPhaseTerminating, CanaryPhaseTerminated,
}

// CanaryStatus is the observed state of a Canary. It is the controller's only memory: a restarted
// controller resumes from it.
type CanaryStatus struct {
	// ObservedGeneration is the generation fully handled by the controller.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Phase of the Canary.
	// +optional
	Phase CanaryPhase `json:"phase,omitempty"`

	// CanaryWeight is the percentage of traffic on the canary (0–100).
	// +optional
	// +kubebuilder:default=0
	CanaryWeight int32 `json:"canaryWeight"`

	// FailedChecks of the current run.
	// +optional
	// +kubebuilder:default=0
	FailedChecks int32 `json:"failedChecks"`

	// Iterations of the current run (checks done).
	// +optional
	// +kubebuilder:default=0
	Iterations int32 `json:"iterations"`

	// LastAppliedSpec is the revision (hash of pod template and tracked configs) of the target the
	// current or last run delivered.
	// +optional
	LastAppliedSpec string `json:"lastAppliedSpec,omitempty"`

	// LastPromotedSpec is the revision the primary runs.
	// +optional
	LastPromotedSpec string `json:"lastPromotedSpec,omitempty"`

	// TrackedConfigs maps "configmap/NAME" and "secret/NAME" referenced by the target's pod template
	// to the checksum of their data.
	// +optional
	TrackedConfigs map[string]string `json:"trackedConfigs,omitempty"`

	// LastTransitionTime is when Phase last changed.
	// +optional
	LastTransitionTime *metav1.Time `json:"lastTransitionTime,omitempty"`

	// LastStepTime is when the current step (weight) started or the last check ran; the next
	// check is due one interval later.
	// +optional
	LastStepTime *metav1.Time `json:"lastStepTime,omitempty"`

	// LastProgressTime is when the run last made progress (a step, a ready canary); the progress
	// deadline counts from it.
	// +optional
	LastProgressTime *metav1.Time `json:"lastProgressTime,omitempty"`

	// PreRolloutPassed records that the pre-rollout webhooks of LastAppliedSpec passed, so a
	// restarted controller does not call them again.
	// +optional
	PreRolloutPassed bool `json:"preRolloutPassed,omitempty"`

	// SlotReleased is true while a run paused with spec.suspend has given its slot up under the
	// cap on runs in flight (--max-progressing): once resumed, the run waits in line, its advance
	// held and its checks going on, until the cap gives it a slot again.
	// +optional
	SlotReleased bool `json:"slotReleased,omitempty"`

	// Analysis holds the last verdict of every metric, so `kubectl describe` explains a rollback.
	// +optional
	// +listType=map
	// +listMapKey=name
	Analysis []MetricResult `json:"analysis,omitempty"`

	// Notifications lists the dedup keys of notifications already sent for the current revision
	// (event name), so a restarted or newly elected controller does not send them again.
	// +optional
	// +listType=set
	Notifications []string `json:"notifications,omitempty"`

	// LastHandledRequests maps a request annotation (sluice.dev/promote, sluice.dev/abort,
	// sluice.dev/retry) to the last value the controller handled.
	// +optional
	LastHandledRequests map[string]string `json:"lastHandledRequests,omitempty"`

	// RunStartTime is when the current or last run started. No metric window of the run starts
	// before it: the run is judged on its own traffic only.
	// +optional
	RunStartTime *metav1.Time `json:"runStartTime,omitempty"`

	// ConsecutiveErrors counts the checks in a row that could not be judged (metrics server
	// unreachable, query rejected, partial results); at analysis.consecutiveErrorLimit the run is
	// rolled back. A check without an error resets it.
	// +optional
	ConsecutiveErrors int32 `json:"consecutiveErrors,omitempty"`

	// LastCheck summarises the last check of the run: its outcome and the window it judged.
	// +optional
	LastCheck *CheckStatus `json:"lastCheck,omitempty"`

	// Webhooks records the answers of the gate webhooks of the current revision, so a restarted
	// controller never calls a webhook again for a round it already answered.
	// +optional
	// +listType=map
	// +listMapKey=name
	Webhooks []WebhookStatus `json:"webhooks,omitempty"`

	// Run records the run in flight, or the last one once it ended: its images, its metrics and
	// every check (the latest 60), for `kubectl sluice dashboard` and `kubectl sluice report`.
	// +optional
	Run *RunRecord `json:"run,omitempty"`

	// Runs summarises the last 10 finished runs, oldest first.
	// +optional
	// +kubebuilder:validation:MaxItems=10
	Runs []RunSummary `json:"runs,omitempty"`

	// Conditions: Ready, Reconciling, Stalled, Promoted.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// CheckOutcome is the outcome of one check of all metrics.
// +kubebuilder:validation:Enum=Passed;Failed;NoEvidence;Error
type CheckOutcome string

// Check outcomes. Only Passed advances a step (NoEvidence too, with analysis.advanceWithoutData).
const (
	// CheckPassed: at least one metric passed and none failed or errored.
	CheckPassed CheckOutcome = "Passed"
	// CheckFailed: a metric failed (Fail, or NoData with onNoData Fail) or a rollout webhook
	// refused; it counts as a failed check.
	CheckFailed CheckOutcome = "Failed"
	// CheckNoEvidence: no metric had a verdict (all Skipped); the step holds.
	CheckNoEvidence CheckOutcome = "NoEvidence"
	// CheckError: a metric could not be judged (metrics unavailable); the step holds and the
	// check counts toward analysis.consecutiveErrorLimit.
	CheckError CheckOutcome = "Error"
)

// CheckStatus summarises one check.
type CheckStatus struct {
	// Time the check ran (the end of its metric windows).
	Time metav1.Time `json:"time"`
	// Outcome of the check.
	Outcome CheckOutcome `json:"outcome"`
	// WindowStart is the start of the longest metric window the check judged; windows never
	// start before the run (status.runStartTime).
	// +optional
	WindowStart *metav1.Time `json:"windowStart,omitempty"`
	// AdvancedWithoutData is true when the step advanced on this check although no metric had a
	// verdict (analysis.advanceWithoutData).
	// +optional
	AdvancedWithoutData bool `json:"advancedWithoutData,omitempty"`
	// Message explains the outcome.
	// +optional
	Message string `json:"message,omitempty"`
}

// WebhookStatus is the last answer of one gate webhook in the current revision, or its call still
// waiting for an answer (pending).
type WebhookStatus struct {
	// Name of the webhook.
	Name string `json:"name"`
	// Type of the webhook (its gate).
	Type WebhookType `json:"type"`
	// Round identifies the gate round the answer belongs to (revision, checks, failed checks,
	// step time).
	Round string `json:"round"`
	// Passed is the answer.
	Passed bool `json:"passed"`
	// Pending is true while the call of Round has not answered: the run goes on meanwhile (checks
	// every interval, the failed-check threshold, the progress deadline) and only the step this
	// webhook gates waits. A webhook has one call at a time: a later round that needs it waits
	// for this call's answer instead of calling again, also after a restart of the controller.
	// +optional
	Pending bool `json:"pending,omitempty"`
	// AskedAt is when the call of Round was first recorded as pending.
	// +optional
	AskedAt *metav1.Time `json:"askedAt,omitempty"`
	// Message explains a refusal, or where a pending call stands (queued, in flight).
	// +optional
	Message string `json:"message,omitempty"`
	// AnsweredAt is when the answer was recorded.
	// +optional
	AnsweredAt *metav1.Time `json:"answeredAt,omitempty"`
}

// Verdict is the outcome of one metric check.
// +kubebuilder:validation:Enum=Pass;Fail;NoData;Error;Skipped
type Verdict string

// Metric verdicts.
const (
	// VerdictPass: the value lies within the threshold range (and the primary comparison).
	VerdictPass Verdict = "Pass"
	// VerdictFail: the value lies outside the threshold range or is worse than the primary's.
	VerdictFail Verdict = "Fail"
	// VerdictNoData: the query returned nothing, NaN or ±Inf.
	VerdictNoData Verdict = "NoData"
	// VerdictError: the query could not be run or returned an unusable result.
	VerdictError Verdict = "Error"
	// VerdictSkipped: the metric was not judged (no data with onNoData Skip, or too few requests).
	VerdictSkipped Verdict = "Skipped"
)

// MetricResult is the last verdict of one metric.
type MetricResult struct {
	// Name of the metric.
	Name string `json:"name"`
	// Verdict of the last check.
	Verdict Verdict `json:"verdict"`
	// Value measured, formatted; empty when there was none.
	// +optional
	Value string `json:"value,omitempty"`
	// PrimaryValue measured for the comparison, formatted.
	// +optional
	PrimaryValue string `json:"primaryValue,omitempty"`
	// ThresholdRange as text, e.g. "[99, +Inf]".
	// +optional
	ThresholdRange string `json:"thresholdRange,omitempty"`
	// Query that was run.
	// +optional
	Query string `json:"query,omitempty"`
	// Window is the metric window the query judged, as a PromQL duration, e.g. 1m or 12s; shorter
	// than the metric's interval when clipped to the run's start.
	// +optional
	Window string `json:"window,omitempty"`
	// WindowStart is when the metric window started.
	// +optional
	WindowStart *metav1.Time `json:"windowStart,omitempty"`
	// Message explains the verdict.
	// +optional
	Message string `json:"message,omitempty"`
	// CheckedAt is when the check ran.
	// +optional
	CheckedAt *metav1.Time `json:"checkedAt,omitempty"`
}
