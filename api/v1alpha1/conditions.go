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
)

// Condition reasons.
const (
	ReasonInitializing       = "Initializing"
	ReasonInitialized        = "Initialized"
	ReasonProgressing        = "Progressing"
	ReasonWaiting            = "Waiting"
	ReasonPromoting          = "Promoting"
	ReasonSucceeded          = "Succeeded"
	ReasonFailed             = "Failed"
	ReasonRolledBack         = "RolledBack"
	ReasonInvalidSpec        = "InvalidSpec"
	ReasonTargetNotFound     = "TargetNotFound"
	ReasonRouteError         = "RouteError"
	ReasonMetricsUnreachable = "MetricsUnreachable"
	ReasonOutsideWindow      = "OutsideWindow"
	ReasonRolloutCapReached  = "RolloutCapReached"
	ReasonSuspended          = "Suspended"
	ReasonAlertProviderError = "AlertProviderError"
	ReasonTerminating        = "Terminating"
)
