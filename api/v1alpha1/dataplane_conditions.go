package v1alpha1

// Condition types of DataPlanes, besides Ready, Reconciling and Stalled. Each is present and True
// only while the situation lasts (abnormal-true), and its message names the objects involved.
const (
	// ConditionControlPlaneNotReady: the mesh's control plane does not run the declared version
	// or a component the data plane needs is unavailable; no wave starts and no pod is restarted.
	ConditionControlPlaneNotReady = "ControlPlaneNotReady"
	// ConditionBlocked: a wave cannot move (an eviction refused by a PodDisruptionBudget, a
	// version pinned in a pod template, a ReplicaSet that cannot create pods); the message names
	// the pod and the PodDisruptionBudget or the workload.
	ConditionBlocked = "Blocked"
	// ConditionUnmanagedPods: running meshed pods Sluice cannot restart run another version.
	ConditionUnmanagedPods = "UnmanagedPods"
	// ConditionDrifted: after convergence, pods came back on another version or without the
	// proxy.
	ConditionDrifted = "Drifted"
	// ConditionNamespacesSkipped: selected namespaces are left out; the message names them and
	// why.
	ConditionNamespacesSkipped = "NamespacesSkipped"
)

// Condition and event reasons of DataPlanes (the shared ones, such as ReasonOutsideWindow,
// ReasonSuspended and ReasonInvalidSpec, are in conditions.go).
const (
	// ReasonPlanned: a run towards the declared version was planned.
	ReasonPlanned = "Planned"
	// ReasonNamespaceAdded: a namespace appeared after the plan and joined a wave.
	ReasonNamespaceAdded = "NamespaceAdded"
	// ReasonWaveStarted: a wave pinned its namespaces and started restarting.
	ReasonWaveStarted = "WaveStarted"
	// ReasonWaveRestarting: a wave is restarting workloads onto the declared version.
	ReasonWaveRestarting = "WaveRestarting"
	// ReasonWaveUpgraded: every meshed pod of a wave runs the declared version; it bakes.
	ReasonWaveUpgraded = "WaveUpgraded"
	// ReasonWaveBaking: a wave bakes under analysis.
	ReasonWaveBaking = "WaveBaking"
	// ReasonWaveSucceeded: a wave baked without reaching the failed-checks threshold.
	ReasonWaveSucceeded = "WaveSucceeded"
	// ReasonCheckFailed: one analysis check of a baking wave failed.
	ReasonCheckFailed = "CheckFailed"
	// ReasonWaveRollingBack: a wave failed and returns to the previous version.
	ReasonWaveRollingBack = "WaveRollingBack"
	// ReasonWaveRolledBack: every meshed pod of a failed wave runs its previous version again.
	ReasonWaveRolledBack = "WaveRolledBack"
	// ReasonRollbackFailed: a rollback made no progress within the progress deadline.
	ReasonRollbackFailed = "RollbackFailed"
	// ReasonUpToDate: every running meshed pod runs the declared version.
	ReasonUpToDate = "UpToDate"
	// ReasonAwaitingApproval: the canary wave succeeded; the fleet waits for
	// sluice.dev/approve-fleet.
	ReasonAwaitingApproval = "AwaitingApproval"
	// ReasonApproved: the fleet was approved.
	ReasonApproved = "Approved"
	// ReasonAborted: `kubectl sluice abort` (sluice.dev/abort) rolled the run back.
	ReasonAborted = "Aborted"
	// ReasonRetried: `kubectl sluice retry` (sluice.dev/retry) started the run again.
	ReasonRetried = "Retried"
	// ReasonCanaryNamespaceNotSelected: a canary namespace does not exist or does not match the
	// namespace selector (CEL cannot see namespaces' labels, so this is checked at reconcile time).
	ReasonCanaryNamespaceNotSelected = "CanaryNamespaceNotSelected"
	// ReasonDuplicateDataPlane: another DataPlane already declares this mesh's data plane.
	ReasonDuplicateDataPlane = "DuplicateDataPlane"
	// ReasonProtectedNamespace: kube-system, kube-public, kube-node-lease or the mesh's
	// control-plane namespace, which a DataPlane never pins or restarts.
	ReasonProtectedNamespace = "ProtectedNamespace"
	// ReasonIstioInjectionLabel: a namespace uses istio-injection=enabled, which wins over
	// istio.io/rev, so relabelling it cannot change its revision.
	ReasonIstioInjectionLabel = "IstioInjectionLabel"
	// ReasonUnknownRevision: a namespace's istio.io/rev names neither a revision with an istiod
	// nor a revision tag.
	ReasonUnknownRevision = "UnknownRevision"
	// ReasonRevisionTag: a namespace's istio.io/rev is a revision tag, resolved to the revision
	// its webhook serves.
	ReasonRevisionTag = "RevisionTag"
	// ReasonNoProxyPods: a selected namespace runs no pod with the proxy and has no injection
	// enabled; it is never pinned (injection is never turned on by a DataPlane).
	ReasonNoProxyPods = "NoProxyPods"
	// ReasonControlPlaneNotReady: see ConditionControlPlaneNotReady.
	ReasonControlPlaneNotReady = "ControlPlaneNotReady"
	// ReasonEvictionBlocked: a PodDisruptionBudget refuses an eviction.
	ReasonEvictionBlocked = "EvictionBlocked"
	// ReasonVersionPinnedInTemplate: a workload restarted and still runs another version.
	ReasonVersionPinnedInTemplate = "VersionPinnedInTemplate"
	// ReasonFailedCreate: a workload's controller cannot create pods.
	ReasonFailedCreate = "FailedCreate"
	// ReasonUnmanagedPods: see ConditionUnmanagedPods.
	ReasonUnmanagedPods = "UnmanagedPods"
	// ReasonUnmeshedPods: pods that should run the proxy came back without it.
	ReasonUnmeshedPods = "UnmeshedPods"
	// ReasonDrifted: see ConditionDrifted.
	ReasonDrifted = "Drifted"
	// ReasonDriftRestarting: driftPolicy Restart restarts the drifted workloads.
	ReasonDriftRestarting = "DriftRestarting"
	// ReasonProgressDeadline: a wave made no progress within progressDeadlineSeconds.
	ReasonProgressDeadline = "ProgressDeadline"
	// ReasonAnalysisFailed: a wave's failed checks reached the threshold.
	ReasonAnalysisFailed = "AnalysisFailed"
	// ReasonDeleted: the DataPlane was deleted; the event says what became of the pins.
	ReasonDeleted = "Deleted"
)

// Annotations of DataPlanes and of the pods they manage.
const (
	// AnnotationApproveFleet on a DataPlane with requireApproval: a new value (conventionally the
	// RFC 3339 time of the approval) lets the fleet waves start after the canary wave.
	AnnotationApproveFleet = "sluice.dev/approve-fleet"
	// AnnotationDataPlaneExclude on a pod, set to "true", leaves it out of every DataPlane.
	AnnotationDataPlaneExclude = "sluice.dev/dataplane-exclude"
	// FinalizerDataPlane lets the controller leave every namespace coherent when a DataPlane is
	// deleted.
	FinalizerDataPlane = "sluice.dev/dataplane"
)
