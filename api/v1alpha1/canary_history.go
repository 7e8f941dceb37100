package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Bounds of the run history kept in a Canary's status (status.run and status.runs). At the bounds
// a Canary's status stays well below etcd's object size limit (measured in
// controllers/canary/history's tests).
const (
	// MaxRunSummaries is the number of finished runs status.runs keeps.
	MaxRunSummaries = 10
	// MaxRunChecks is the number of checks status.run keeps: the latest ones.
	MaxRunChecks = 60
	// MaxRunMetrics is the number of metrics a run record holds: analysis.metrics (at most 32)
	// and the rollout webhooks' verdict.
	MaxRunMetrics = 40
	// MaxRunImages is the number of container images a run record names.
	MaxRunImages = 16
)

// RunOutcome is how a run ended.
// +kubebuilder:validation:Enum=Promoted;RolledBack;Cancelled;Superseded
type RunOutcome string

// Run outcomes.
const (
	// RunPromoted: the run's revision was promoted (phase Succeeded).
	RunPromoted RunOutcome = "Promoted"
	// RunRolledBack: the run was rolled back (phase Failed): failed checks, deadline, abort.
	RunRolledBack RunOutcome = "RolledBack"
	// RunCancelled: the target went back to the primary's revision during the run.
	RunCancelled RunOutcome = "Cancelled"
	// RunSuperseded: a newer revision arrived during the run and started a run of its own.
	RunSuperseded RunOutcome = "Superseded"
)

// RunRecord is one run as the dashboard plots it: what it delivers, its metrics (thresholds and
// queries once) and its checks (per metric the value and verdict only).
type RunRecord struct {
	// Revision the run delivers (status.lastAppliedSpec).
	Revision string `json:"revision"`
	// StartTime is when the run started (status.runStartTime).
	StartTime metav1.Time `json:"startTime"`
	// EndTime is when the run ended; unset while it is in flight.
	// +optional
	EndTime *metav1.Time `json:"endTime,omitempty"`
	// Outcome of the run once it ended.
	// +optional
	Outcome RunOutcome `json:"outcome,omitempty"`
	// Images of the target's containers when the run started: the new revision.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	Images []ContainerImage `json:"images,omitempty"`
	// PrimaryImages of the primary's containers when the run started: the revision it replaces.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	PrimaryImages []ContainerImage `json:"primaryImages,omitempty"`
	// Metrics judged by the run's checks, in the order of checks[].results.
	// +optional
	// +kubebuilder:validation:MaxItems=40
	Metrics []RunMetric `json:"metrics,omitempty"`
	// Checks of the run, oldest first: the latest 60.
	// +optional
	// +kubebuilder:validation:MaxItems=60
	Checks []CheckRecord `json:"checks,omitempty"`
	// DroppedChecks counts the run's earliest checks no longer in checks.
	// +optional
	DroppedChecks int32 `json:"droppedChecks,omitempty"`
}

// ContainerImage is the image of one container.
type ContainerImage struct {
	// Container name.
	Container string `json:"container"`
	// Image reference.
	Image string `json:"image"`
}

// RunMetric is one metric a run judged: its threshold and query, recorded once per run.
type RunMetric struct {
	// Name of the metric (analysis.metrics[].name; rollout-webhooks for the rollout webhooks).
	Name string `json:"name"`
	// ThresholdRange the value must fall in (from the spec when the metric was first checked).
	// +optional
	ThresholdRange *ThresholdRange `json:"thresholdRange,omitempty"`
	// CompareToPrimary bounds the value by the primary's (from the spec).
	// +optional
	CompareToPrimary *PrimaryComparison `json:"compareToPrimary,omitempty"`
	// Interval is the metric's query window as configured, e.g. 1m.
	// +optional
	Interval string `json:"interval,omitempty"`
	// Query is the query of the latest check, cut at 1024 bytes.
	// +optional
	Query string `json:"query,omitempty"`
}

// CheckRecord is one check of a run.
type CheckRecord struct {
	// Time the check ran (the end of its metric windows).
	Time metav1.Time `json:"time"`
	// Weight is the canary weight the check judged (before any step it allowed).
	Weight int32 `json:"weight"`
	// Outcome of the check.
	Outcome CheckOutcome `json:"outcome"`
	// WindowStart is the start of the longest metric window the check judged.
	// +optional
	WindowStart *metav1.Time `json:"windowStart,omitempty"`
	// Results holds one entry per metric of the run record, in the same order; an empty entry
	// for a metric the check did not judge.
	// +optional
	// +kubebuilder:validation:MaxItems=40
	Results []CheckValue `json:"results,omitempty"`
}

// CheckValue is one metric's measurement in a check.
type CheckValue struct {
	// Value measured, formatted as in status.analysis; empty when there was none.
	// +optional
	Value string `json:"value,omitempty"`
	// PrimaryValue measured for the comparison with the primary.
	// +optional
	PrimaryValue string `json:"primaryValue,omitempty"`
	// Verdict of the metric in this check.
	// +optional
	Verdict Verdict `json:"verdict,omitempty"`
}

// RunSummary is one finished run.
type RunSummary struct {
	// Revision the run delivered.
	Revision string `json:"revision"`
	// Outcome of the run.
	Outcome RunOutcome `json:"outcome"`
	// StartTime and EndTime of the run.
	StartTime metav1.Time `json:"startTime"`
	EndTime   metav1.Time `json:"endTime"`
	// Reason the run ended, as its event said it (cut at 1024 bytes).
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Reason string `json:"reason,omitempty"`
	// Checks the run made, and how many of them failed.
	// +optional
	Checks int32 `json:"checks,omitempty"`
	// +optional
	FailedChecks int32 `json:"failedChecks,omitempty"`
	// MaxWeight is the highest canary weight a check of the run judged.
	// +optional
	MaxWeight int32 `json:"maxWeight,omitempty"`
	// Images of the target's containers in the run.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	Images []ContainerImage `json:"images,omitempty"`
}
