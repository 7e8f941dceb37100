package v1alpha1

// Built-in metric names. Their PromQL depends on the Canary's provider (and mesh); see package
// analysis for the queries and the metric sources they expect.
const (
	// MetricRequestSuccessRate is the percentage (0–100) of non-5xx responses served by the canary.
	MetricRequestSuccessRate = "request-success-rate"
	// MetricRequestDuration is the canary's P99 request duration in milliseconds.
	MetricRequestDuration = "request-duration"
)

// CanaryAnalysis defines the traffic steps and the checks run at each of them.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.stepWeight) && has(self.stepWeights))",message="analysis: set either stepWeight or stepWeights, not both"
// +kubebuilder:validation:XValidation:rule="!has(self.stepWeight) || self.stepWeight <= (has(self.maxWeight) ? self.maxWeight : 100)",message="analysis.stepWeight must be between 1 and analysis.maxWeight"
// +kubebuilder:validation:XValidation:rule="!has(self.stepWeights) || !has(self.maxWeight) || self.stepWeights.all(w, w <= self.maxWeight)",message="analysis.stepWeights must not exceed analysis.maxWeight"
// +kubebuilder:validation:XValidation:rule="!(has(self.iterations) && self.iterations > 0 && !has(self.match)) || !(has(self.stepWeight) || has(self.stepWeights) || has(self.maxWeight) || has(self.stepWeightPromotion))",messageExpression="'analysis.' + (has(self.stepWeight) ? 'stepWeight' : has(self.stepWeights) ? 'stepWeights' : has(self.maxWeight) ? 'maxWeight' : 'stepWeightPromotion') + ' does not apply: analysis.iterations without analysis.match is a blue/green run (0 % to the canary for the iterations, then 100 % at once)'"
// +kubebuilder:validation:XValidation:rule="!(has(self.mirror) && self.mirror) || (has(self.iterations) && self.iterations > 0 && !has(self.match))",message="analysis.mirror applies to blue/green runs: set analysis.iterations, without analysis.match"
// +kubebuilder:validation:XValidation:rule="!has(self.mirrorWeight) || (has(self.mirror) && self.mirror)",message="analysis.mirrorWeight needs analysis.mirror: true"
// +kubebuilder:validation:XValidation:rule="!has(self.sessionAffinity) || !(has(self.iterations) && self.iterations > 0)",message="analysis.sessionAffinity applies to weighted runs (stepWeight or stepWeights): an A/B or blue/green run has no weights"
type CanaryAnalysis struct {
	// Interval between two checks, a duration of at least 1s such as 1m. Default 1m.
	// +kubebuilder:default="1m"
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+(\\\\.[0-9]+)?(ms|s|m|h))+$') || duration(self) >= duration('1s')",message="analysis.interval must be a duration of at least 1s"
	// +optional
	Interval string `json:"interval,omitempty"`

	// Threshold is the number of failed checks after which the run is rolled back. Default 5.
	// +kubebuilder:default=5
	// +kubebuilder:validation:Minimum=1
	// +optional
	Threshold int32 `json:"threshold,omitempty"`

	// MaxWeight is the highest canary weight in percent (1–100) before promotion. Default 100
	// when stepWeight is used; the last of stepWeights otherwise.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	MaxWeight int32 `json:"maxWeight,omitempty"`

	// StepWeight is the canary weight increment in percent (1–maxWeight). The last step lands
	// exactly on maxWeight.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	StepWeight int32 `json:"stepWeight,omitempty"`

	// StepWeights lists the canary weights in percent, strictly increasing, each 1–100.
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:Minimum=1
	// +kubebuilder:validation:items:Maximum=100
	// +kubebuilder:validation:XValidation:rule="self.all(w, self.exists_one(v, v == w)) && self.isSorted()",message="analysis.stepWeights must be strictly increasing"
	// +optional
	StepWeights []int32 `json:"stepWeights,omitempty"`

	// StepWeightPromotion is the weight increment in percent used to shift traffic back to the
	// promoted primary. Empty means all at once.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	StepWeightPromotion int32 `json:"stepWeightPromotion,omitempty"`

	// Iterations is the number of passing checks of an A/B run (with Match) or of a blue/green
	// run (without Match: the canary gets no traffic, then all of it at once); weights are not
	// used then.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Iterations int32 `json:"iterations,omitempty"`

	// Mirror copies the primary's requests to the canary during a blue/green run (responses from
	// the canary are discarded). Only for idempotent traffic.
	// +optional
	Mirror bool `json:"mirror,omitempty"`

	// MirrorWeight is the percentage of requests mirrored. Default 100.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	MirrorWeight int32 `json:"mirrorWeight,omitempty"`

	// SessionAffinity keeps users who reached the canary on it for the rest of a weighted run.
	// +optional
	SessionAffinity *SessionAffinity `json:"sessionAffinity,omitempty"`

	// Match routes requests that match to the canary for an A/B run.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	Match []HTTPMatchRequest `json:"match,omitempty"`

	// PrimaryReadyThreshold is the percentage of primary pods that must be ready before traffic
	// moves. Default 100.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	PrimaryReadyThreshold *int32 `json:"primaryReadyThreshold,omitempty"`

	// CanaryReadyThreshold is the percentage of canary pods that must be ready before traffic
	// moves. Default 100.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	CanaryReadyThreshold *int32 `json:"canaryReadyThreshold,omitempty"`

	// FailedChecksMode says how failed checks accumulate: Total (Flagger's behaviour, default)
	// counts every failed check of a run; Consecutive resets the count after a passing check.
	// +kubebuilder:validation:Enum=Total;Consecutive
	// +optional
	FailedChecksMode string `json:"failedChecksMode,omitempty"`

	// Metrics checked at every step. Names are unique: a second metric of the same name is
	// refused, not merged. They may use at most 4 distinct metrics servers (the manager's
	// --max-metrics-servers); a Canary using more is stalled naming the metrics beyond.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	Metrics []CanaryMetric `json:"metrics,omitempty"`

	// Webhooks called at the gates of a run. Names are unique: each webhook is its own call.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	Webhooks []CanaryWebhook `json:"webhooks,omitempty"`

	// AdvanceWithoutData lets a step advance on a check in which no metric had a verdict (every
	// metric Skipped: onNoData Skip, or fewer requests than minRequestCount). Default false: such a
	// check is no evidence, and the step holds until a metric passes (the progress deadline still
	// applies). When a step advances without data, the Canary's status and an event say so.
	// +optional
	AdvanceWithoutData bool `json:"advanceWithoutData,omitempty"`

	// ConsecutiveErrorLimit is the number of consecutive checks that could not be judged (metrics
	// server unreachable, query rejected, partial results) after which the run is rolled back with
	// "metrics unavailable" as the reason. Such checks are not failed checks: the step holds, no
	// weight changes. Default 4, as Argo Rollouts' consecutiveErrorLimit.
	// +kubebuilder:default=4
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	ConsecutiveErrorLimit *int32 `json:"consecutiveErrorLimit,omitempty"`

	// Alerts send notifications of transitions to AlertProviders.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	Alerts []CanaryAlert `json:"alerts,omitempty"`
}

// CanaryMetric is one check: a built-in metric or a MetricTemplate, with its threshold range.
// A metric needs a thresholdRange or compareToPrimary: without either it would pass whatever it
// measured.
//
// +kubebuilder:validation:XValidation:rule="has(self.thresholdRange) || has(self.compareToPrimary)",message="metric: set thresholdRange (or compareToPrimary); without either the metric would pass whatever it measures"
// +kubebuilder:validation:XValidation:rule="has(self.templateRef) || has(self.query) || self.name in ['request-success-rate', 'request-duration']",message="metric: name must be a built-in (request-success-rate, request-duration), or query or templateRef must be set"
// +kubebuilder:validation:XValidation:rule="!(has(self.templateRef) && has(self.query))",message="metric: set templateRef or query, not both"
// +kubebuilder:validation:XValidation:rule="!has(self.query) || !(has(self.compareToPrimary) || has(self.minRequestCount))",message="metric.query is run as written: compareToPrimary and minRequestCount need a built-in metric or a MetricTemplate"
type CanaryMetric struct {
	// Name of the metric: a built-in name, or any name when TemplateRef is set.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`

	// Interval is the query window, a duration such as 1m. Default: the analysis interval. It must
	// be at least twice the Prometheus scrape interval, or rate() returns nothing.
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+(\\\\.[0-9]+)?(ms|s|m|h))+$') || duration(self) >= duration('1s')",message="metric.interval must be a duration of at least 1s"
	// +optional
	Interval string `json:"interval,omitempty"`

	// ThresholdRange is the inclusive range the value must fall in to pass.
	// +optional
	ThresholdRange *ThresholdRange `json:"thresholdRange,omitempty"`

	// TemplateRef points at a MetricTemplate; its namespace defaults to the Canary's.
	// +optional
	TemplateRef *CrossNamespaceObjectReference `json:"templateRef,omitempty"`

	// Query is a PromQL query run as written (no template variables) against the Canary's
	// metrics server, as Flagger's inline metrics[].query. A MetricTemplate is usually better:
	// it is rendered for the Canary's namespace, target and interval. By default the manager
	// confines an inline query to the Canary's namespace: every series selector gets a
	// namespace="<the Canary's namespace>" matcher (see docs/metrics.md). At most 4096 bytes.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	Query string `json:"query,omitempty"`

	// TemplateVariables are extra variables for the MetricTemplate, available as
	// {{ .variables.NAME }}.
	// +optional
	TemplateVariables map[string]string `json:"templateVariables,omitempty"`

	// OnNoData says what an empty, NaN or infinite result means: Fail (default) counts a failed
	// check; Skip ignores the metric for this check.
	// +kubebuilder:validation:Enum=Fail;Skip
	// +optional
	OnNoData NoDataPolicy `json:"onNoData,omitempty"`

	// MinRequestCount skips the metric (instead of failing it) while the canary served fewer
	// requests than this within the metric interval. Built-in metrics only.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MinRequestCount *int64 `json:"minRequestCount,omitempty"`

	// CompareToPrimary also runs the query for the primary and fails when the canary is worse than
	// the primary by more than MaxDelta.
	// +optional
	CompareToPrimary *PrimaryComparison `json:"compareToPrimary,omitempty"`
}

// NoDataPolicy says what a metric with no data means.
type NoDataPolicy string

const (
	// NoDataFail counts no data as a failed check (the default).
	NoDataFail NoDataPolicy = "Fail"
	// NoDataSkip ignores the metric for this check.
	NoDataSkip NoDataPolicy = "Skip"
)

// ThresholdRange is an inclusive range; either bound may be omitted, not both.
//
// +kubebuilder:validation:XValidation:rule="has(self.min) || has(self.max)",message="thresholdRange: set min, max or both"
// +kubebuilder:validation:XValidation:rule="!has(self.min) || !has(self.max) || self.min <= self.max",message="thresholdRange.min must be less than or equal to thresholdRange.max"
type ThresholdRange struct {
	// +optional
	Min *float64 `json:"min,omitempty"`
	// +optional
	Max *float64 `json:"max,omitempty"`
}

// PrimaryComparison bounds how much worse the canary may be than the primary.
type PrimaryComparison struct {
	// MaxDelta is the largest allowed difference, in the metric's unit.
	// +kubebuilder:validation:Minimum=0
	MaxDelta float64 `json:"maxDelta"`
	// Direction says which values are better: HigherIsBetter (success rates) or LowerIsBetter
	// (latencies, error rates). Default: HigherIsBetter for request-success-rate, LowerIsBetter
	// otherwise.
	// +kubebuilder:validation:Enum=HigherIsBetter;LowerIsBetter
	// +optional
	Direction string `json:"direction,omitempty"`
}

// CrossNamespaceObjectReference names an object, optionally in another namespace.
type CrossNamespaceObjectReference struct {
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// WebhookType is the gate a webhook is called at.
// +kubebuilder:validation:Enum=confirm-rollout;pre-rollout;rollout;confirm-traffic-increase;confirm-promotion;post-rollout;rollback;event
type WebhookType string

// Webhook types, as in Flagger.
const (
	WebhookConfirmRollout         WebhookType = "confirm-rollout"
	WebhookPreRollout             WebhookType = "pre-rollout"
	WebhookRollout                WebhookType = "rollout"
	WebhookConfirmTrafficIncrease WebhookType = "confirm-traffic-increase"
	WebhookConfirmPromotion       WebhookType = "confirm-promotion"
	WebhookPostRollout            WebhookType = "post-rollout"
	WebhookRollback               WebhookType = "rollback"
	WebhookEvent                  WebhookType = "event"
)

// CanaryWebhook is an HTTP call at a gate of the run; a 2xx answer passes. A manual webhook makes
// no call: its gate waits until someone approves with the sluice.dev/promote annotation
// (`kubectl sluice promote`).
//
// +kubebuilder:validation:XValidation:rule="has(self.url) != (has(self.manual) && self.manual)",message="webhook: set url, or manual: true, not both"
// +kubebuilder:validation:XValidation:rule="!(has(self.manual) && self.manual) || self.type in ['confirm-rollout', 'confirm-traffic-increase', 'confirm-promotion']",message="webhook: manual is only for confirm-rollout, confirm-traffic-increase and confirm-promotion"
// +kubebuilder:validation:XValidation:rule="!has(self.timeout) || !self.timeout.matches('^([0-9]+(\\\\.[0-9]+)?(ms|s|m|h))+$') || duration(self.timeout).getMilliseconds() * (1 + (has(self.retries) ? self.retries : 0)) <= 600000",message="webhook: timeout * (1 + retries) must be at most 10m, so that a call with its retries ends within 10 minutes"
type CanaryWebhook struct {
	// Name of the webhook, unique within the Canary.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// Type is the gate. Default rollout.
	// +kubebuilder:default=rollout
	// +optional
	Type WebhookType `json:"type,omitempty"`
	// URL receives a POST with a JSON payload (name, namespace, phase, checksum, metadata).
	// +kubebuilder:validation:Pattern=`^https?://`
	// +optional
	URL string `json:"url,omitempty"`
	// Manual makes the gate wait for the sluice.dev/promote annotation instead of calling a URL.
	// +optional
	Manual bool `json:"manual,omitempty"`
	// Timeout of one attempt, a duration of at most 5m. Default 10s (as Flagger's). A call's whole
	// time, from the check or gate that asks to its answer, is bounded by its budget: timeout
	// times (1 + retries) plus a 1s pause between attempts, at most 10m; the time it waits for a free
	// slot counts, and a call that finds none within one timeout fails ("queued for 10s, no slot
	// free").
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+(\\\\.[0-9]+)?(ms|s|m|h))+$') || duration(self) <= duration('5m')",message="webhook timeout must be at most 5m"
	// +optional
	Timeout string `json:"timeout,omitempty"`
	// Retries of a failed call within one check, at most 10; timeout times (1 + retries) must be
	// at most 10m.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10
	// +optional
	Retries int32 `json:"retries,omitempty"`
	// Metadata is sent in the payload.
	// +optional
	Metadata map[string]string `json:"metadata,omitempty"`
	// MuteAlert mutes the alert sent while this webhook halts advancement, as in Flagger: a
	// confirm-rollout, confirm-traffic-increase or confirm-promotion gate waiting for it, or a
	// pre-rollout check it fails. The Kubernetes event is still recorded, and a rollback it leads
	// to is still alerted. A gate held by several webhooks alerts unless all of them mute it.
	// +optional
	MuteAlert bool `json:"muteAlert,omitempty"`
}

// AlertSeverity routes notifications: info gets everything, warn gets warn and error, error only
// error.
// +kubebuilder:validation:Enum=info;warn;error
type AlertSeverity string

// Alert severities.
const (
	SeverityInfo  AlertSeverity = "info"
	SeverityWarn  AlertSeverity = "warn"
	SeverityError AlertSeverity = "error"
)

// CanaryAlert sends the run's notifications of at least Severity to an AlertProvider.
type CanaryAlert struct {
	// Name of the alert.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// Severity is the lowest severity sent. Default info.
	// +kubebuilder:default=info
	// +optional
	Severity AlertSeverity `json:"severity,omitempty"`
	// ProviderRef names the AlertProvider; its namespace defaults to the Canary's.
	ProviderRef CrossNamespaceObjectReference `json:"providerRef"`
}
