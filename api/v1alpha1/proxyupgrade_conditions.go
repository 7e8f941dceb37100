package v1alpha1

// Condition types of ProxyUpgrades, besides Ready, Reconciling and Stalled.
const (
	// ConditionNamespacesSkipped is True while selected namespaces are left out of the upgrade;
	// the message names them and why (e.g. istio-injection=enabled).
	ConditionNamespacesSkipped = "NamespacesSkipped"
)

// Condition reasons of ProxyUpgrades (the shared ones, such as ReasonOutsideWindow,
// ReasonSuspended and ReasonInvalidSpec, are in conditions.go).
const (
	// ReasonWaveRestarting: a wave is restarting workloads onto the target.
	ReasonWaveRestarting = "WaveRestarting"
	// ReasonWaveBaking: every pod of a wave runs the target; the wave bakes under analysis.
	ReasonWaveBaking = "WaveBaking"
	// ReasonWaveRollingBack: a wave failed and returns to the previous version.
	ReasonWaveRollingBack = "WaveRollingBack"
	// ReasonAwaitingApproval: the canary wave succeeded; the fleet waits for
	// sluice.dev/approve-fleet=true.
	ReasonAwaitingApproval = "AwaitingApproval"
	// ReasonCanaryNamespaceNotSelected: a canary namespace does not exist or does not match the
	// namespace selector (CEL cannot see namespaces' labels, so this is checked at reconcile time).
	ReasonCanaryNamespaceNotSelected = "CanaryNamespaceNotSelected"
	// ReasonIstioInjectionLabel: a namespace uses istio-injection=enabled, which wins over
	// istio.io/rev, so relabelling it cannot change its revision.
	ReasonIstioInjectionLabel = "IstioInjectionLabel"
	// ReasonUnknownRevision: a namespace's istio.io/rev is neither the previous nor the target
	// revision.
	ReasonUnknownRevision = "UnknownRevision"
	// ReasonProgressDeadline: a wave made no progress within progressDeadlineSeconds.
	ReasonProgressDeadline = "ProgressDeadline"
	// ReasonAnalysisFailed: a wave's failed checks reached the threshold.
	ReasonAnalysisFailed = "AnalysisFailed"
)

// AnnotationApproveFleet on a ProxyUpgrade with requireApproval, set to "true", lets the fleet
// waves start after the canary wave.
const AnnotationApproveFleet = "sluice.dev/approve-fleet"
