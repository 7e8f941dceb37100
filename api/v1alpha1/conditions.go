package v1alpha1

// Condition types of Sluice resources. Ready is the summary; Reconciling and Stalled are
// "abnormal-true" (present and True only while the resource is in that state), as in Flux.
const (
	// ConditionReady: the resource is in its desired steady state (Canary: primary serving,
	// no run in flight or a run progressing normally).
	ConditionReady = "Ready"
	// ConditionReconciling: the controller is working towards the desired state (a run in flight).
	ConditionReconciling = "Reconciling"
	// ConditionStalled: the controller cannot make progress without a change to the spec or the
	// cluster; the reason and message say what.
	ConditionStalled = "Stalled"
	// ConditionPromoted: the last run was promoted (True) or rolled back (False).
	ConditionPromoted = "Promoted"
	// ConditionAlertProviderError is True while an AlertProvider the alerts name (or its Secret)
	// is misconfigured; the message names the missing object or key.
	ConditionAlertProviderError = "AlertProviderError"
)

// Condition reasons.
const (
	ReasonInitializing       = "Initializing"
	ReasonInitialized        = "Initialized"
	ReasonProgressing        = "Progressing"
	ReasonWaiting            = "Waiting"
	ReasonSucceeded          = "Succeeded"
	ReasonRolledBack         = "RolledBack"
	ReasonInvalidSpec        = "InvalidSpec"
	ReasonTargetNotFound     = "TargetNotFound"
	ReasonRouteError         = "RouteError"
	ReasonRouteNotFound      = "RouteNotFound"
	ReasonRouteConflict      = "RouteConflict"
	ReasonMetricsUnreachable = "MetricsUnreachable"
	ReasonOutsideWindow      = "OutsideWindow"
	ReasonRolloutCapReached  = "RolloutCapReached"
	ReasonSuspended          = "Suspended"
	ReasonAlertProviderError = "AlertProviderError"
	ReasonTerminating        = "Terminating"
	// ReasonRevertToUnpromoted: deleting with revertOnDeletion hands the traffic back to a target
	// that runs a revision the primary does not (e.g. the one a run just rolled back).
	ReasonRevertToUnpromoted = "RevertToUnpromoted"
	ReasonPrimaryMissing     = "PrimaryMissing"
	ReasonTargetConflict     = "TargetConflict"
	ReasonReconcileError     = "ReconcileError"
	// ReasonInitializationStalled: the primary did not become ready within the progress
	// deadline during initialization (the message names what it waits on).
	ReasonInitializationStalled = "InitializationStalled"
	// ReasonInvalidQuery: a MetricTemplate's query does not render or is not valid PromQL.
	ReasonInvalidQuery = "InvalidQuery"
	// ReasonValidQuery: a MetricTemplate's query renders and parses.
	ReasonValidQuery = "ValidQuery"
	// ReasonInvalidWindow: a progression window can never open; runs hold (fail closed).
	ReasonInvalidWindow = "InvalidWindow"
	// ReasonMetricsUnavailable: checks could not be judged; the run holds, and rolls back past
	// analysis.consecutiveErrorLimit.
	ReasonMetricsUnavailable = "MetricsUnavailable"
	// ReasonCanaryUnready: the canary lost its ready pods; its weight went to 0 and the run waits
	// under the progress deadline.
	ReasonCanaryUnready = "CanaryUnready"
	// ReasonPrimaryUnready: the primary fell below its ready threshold during a run; the run
	// holds (no step, no promotion) under the progress deadline.
	ReasonPrimaryUnready = "PrimaryUnready"
	// ReasonNoEvidence: the last check had no metric verdict; the step holds.
	ReasonNoEvidence     = "NoEvidence"
	ReasonResumed        = "Resumed"
	ReasonPrimaryCreated = "PrimaryCreated"
)
