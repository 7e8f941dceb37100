package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DataPlanePhase is where a DataPlane is.
// +kubebuilder:validation:Enum="";Pending;Waiting;Progressing;RollingBack;UpToDate;Incomplete;Drifted;RolledBack;Failed
type DataPlanePhase string

// DataPlane phases.
const (
	// DataPlanePending: a run towards the declared version is planned; no wave started yet.
	DataPlanePending DataPlanePhase = "Pending"
	// DataPlaneWaiting: the next wave is due but held (control plane not ready, window closed,
	// approval missing).
	DataPlaneWaiting DataPlanePhase = "Waiting"
	// DataPlaneProgressing: a wave is restarting workloads or baking.
	DataPlaneProgressing DataPlanePhase = "Progressing"
	// DataPlaneRollingBack: a wave failed and returns to the version its namespaces ran before.
	DataPlaneRollingBack DataPlanePhase = "RollingBack"
	// DataPlaneUpToDate: every wave succeeded and every running meshed pod runs the declared
	// version.
	DataPlaneUpToDate DataPlanePhase = "UpToDate"
	// DataPlaneIncomplete: every wave succeeded, but pods Sluice cannot restart (no owner, an
	// unknown owner kind) still run another version; they are named in status.unmanagedPods.
	DataPlaneIncomplete DataPlanePhase = "Incomplete"
	// DataPlaneDrifted: the data plane had converged, and pods came back on another version or
	// without the proxy; they are named in status.driftedPods.
	DataPlaneDrifted DataPlanePhase = "Drifted"
	// DataPlaneRolledBack: a wave failed and was rolled back; later waves did not start.
	DataPlaneRolledBack DataPlanePhase = "RolledBack"
	// DataPlaneFailed: a wave failed and could not be rolled back either (or the run was
	// aborted between waves); the Ready condition keeps the root cause.
	DataPlaneFailed DataPlanePhase = "Failed"
)

// DataPlanePhases lists the phases in lifecycle order; the index is the value of the
// sluice_dataplane_phase metric (and of the dashboard's mapping).
var DataPlanePhases = []DataPlanePhase{
	DataPlanePending, DataPlaneWaiting, DataPlaneProgressing, DataPlaneRollingBack, DataPlaneUpToDate,
	DataPlaneRolledBack, DataPlaneFailed, DataPlaneIncomplete, DataPlaneDrifted,
}

// WavePhase is where one wave is.
// +kubebuilder:validation:Enum=Pending;Restarting;Baking;Succeeded;RollingBack;RolledBack;Failed
type WavePhase string

// Wave phases.
const (
	WavePending     WavePhase = "Pending"
	WaveRestarting  WavePhase = "Restarting"
	WaveBaking      WavePhase = "Baking"
	WaveSucceeded   WavePhase = "Succeeded"
	WaveRollingBack WavePhase = "RollingBack"
	WaveRolledBack  WavePhase = "RolledBack"
	// WaveFailed: the rollback of the wave made no progress within the progress deadline.
	WaveFailed WavePhase = "Failed"
)

// UpdateAttemptResult is the outcome of the controller's last attempt to move a wave forward.
// +kubebuilder:validation:Enum=Succeeded;Failed;Blocked
type UpdateAttemptResult string

// Update attempt results.
const (
	// UpdateAttemptSucceeded: every pin, restart and eviction of the attempt went through.
	UpdateAttemptSucceeded UpdateAttemptResult = "Succeeded"
	// UpdateAttemptFailed: an API call failed; the message says which.
	UpdateAttemptFailed UpdateAttemptResult = "Failed"
	// UpdateAttemptBlocked: nothing failed but the wave cannot move (an eviction refused by a
	// PodDisruptionBudget, a workload that restarted and still runs another version, the
	// control plane not ready).
	UpdateAttemptBlocked UpdateAttemptResult = "Blocked"
)

// RestartMethod is how a workload's pods are replaced.
// +kubebuilder:validation:Enum=Rollout;Evict;RestartAt
type RestartMethod string

// Restart methods.
const (
	// RestartRollout sets the pod template annotation sluice.dev/restartedAt (what `kubectl
	// rollout restart` does), for Deployments and rolling DaemonSets and StatefulSets.
	RestartRollout RestartMethod = "Rollout"
	// RestartEvict evicts the pods one at a time through the Eviction API (PodDisruptionBudgets
	// apply), for OnDelete StatefulSets and DaemonSets.
	RestartEvict RestartMethod = "Evict"
	// RestartAt sets an Argo Rollouts Rollout's spec.restartAt, its own restart field.
	RestartAt RestartMethod = "RestartAt"
)

// DataPlaneStatus is the observed state of a DataPlane. It is the controller's only memory: a
// restarted controller resumes from it and never restarts a workload twice in a wave.
type DataPlaneStatus struct {
	// ObservedGeneration is the generation fully handled by the controller.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Phase of the DataPlane.
	// +optional
	Phase DataPlanePhase `json:"phase,omitempty"`

	// Version is the version (Linkerd) or revision (Istio) the current run moves to: the
	// declared one, once the controller has seen it.
	// +optional
	Version string `json:"version,omitempty"`

	// ConvergedVersion is the version every selected meshed pod last ran when a run ended up to
	// date. A run back to it is a rollback (spec.rollback).
	// +optional
	ConvergedVersion string `json:"convergedVersion,omitempty"`

	// PreviousVersion is the version the data plane converged on before ConvergedVersion.
	// +optional
	PreviousVersion string `json:"previousVersion,omitempty"`

	// Rollback is true when the current run moves back to ConvergedVersion or PreviousVersion
	// (the version was set back).
	// +optional
	Rollback bool `json:"rollback,omitempty"`

	// ControlPlane is what the controller last saw of the mesh's control plane.
	// +optional
	ControlPlane ControlPlaneStatus `json:"controlPlane,omitempty"`

	// CurrentWave is the index in Waves of the wave running or last run (0: the canary wave).
	// +kubebuilder:default=0
	// +optional
	CurrentWave int32 `json:"currentWave"`

	// Desired is the number of meshed pods the selected namespaces should run: the desired
	// replicas of every workload running the proxy, plus every other running pod with the proxy
	// (excluded pods aside); Current is how many of them run the declared version.
	// +kubebuilder:default=0
	// +optional
	Desired int32 `json:"desired"`
	// +kubebuilder:default=0
	// +optional
	Current int32 `json:"current"`

	// Waves are planned when a run starts: the canary namespaces first, then the rest in a
	// stable order.
	// +optional
	Waves []DataPlaneWave `json:"waves,omitempty"`

	// Namespaces has one row per namespace of the data plane: its wave, counts and status.
	// +optional
	// +listType=map
	// +listMapKey=namespace
	Namespaces []DataPlaneNamespace `json:"namespaces,omitempty"`

	// Pins maps every namespace the DataPlane pinned (Linkerd config.linkerd.io/proxy-version,
	// Istio istio.io/rev) to the value it last wrote; deletion uses it to leave every namespace
	// coherent.
	// +optional
	Pins map[string]string `json:"pins,omitempty"`

	// Skipped lists selected namespaces the DataPlane never touches, with the reason (protected
	// namespaces, Istio's istio-injection=enabled, an unknown revision).
	// +optional
	// +listType=map
	// +listMapKey=namespace
	Skipped []SkippedNamespace `json:"skipped,omitempty"`

	// UnmanagedPods names (namespace/name) running meshed pods Sluice cannot restart (no owner,
	// an owner kind it does not know) that run another version than the declared one; they keep
	// the DataPlane from being up to date unless excluded (spec.excludePods). At most 50.
	// +optional
	// +kubebuilder:validation:MaxItems=50
	UnmanagedPods []string `json:"unmanagedPods,omitempty"`

	// UnmeshedPods names (namespace/name) running pods that should run the proxy and came back
	// without it (injector down, injection label removed). At most 50.
	// +optional
	// +kubebuilder:validation:MaxItems=50
	UnmeshedPods []string `json:"unmeshedPods,omitempty"`

	// DriftedPods names (namespace/name) pods that, after convergence, came back on another
	// version or without the proxy. At most 50.
	// +optional
	// +kubebuilder:validation:MaxItems=50
	DriftedPods []string `json:"driftedPods,omitempty"`

	// DriftDetectedAt is when the current drift was first seen; cleared when it is gone.
	// +optional
	DriftDetectedAt *metav1.Time `json:"driftDetectedAt,omitempty"`

	// Analysis holds the last verdict of every metric in every namespace of the baking wave.
	// +optional
	Analysis []NamespaceMetricResult `json:"analysis,omitempty"`

	// LastTransitionTime is when Phase last changed.
	// +optional
	LastTransitionTime *metav1.Time `json:"lastTransitionTime,omitempty"`

	// LastUpdateAttempt is when the controller last pinned, restarted or evicted.
	// +optional
	LastUpdateAttempt *metav1.Time `json:"lastUpdateAttempt,omitempty"`
	// LastUpdateAttemptResult is the outcome of that attempt.
	// +optional
	LastUpdateAttemptResult UpdateAttemptResult `json:"lastUpdateAttemptResult,omitempty"`
	// LastUpdateAttemptMessage explains it.
	// +optional
	LastUpdateAttemptMessage string `json:"lastUpdateAttemptMessage,omitempty"`

	// Notifications lists the dedup keys of notifications already sent in this run.
	// +optional
	// +listType=set
	Notifications []string `json:"notifications,omitempty"`

	// LastHandledRequests maps each request annotation (sluice.dev/approve-fleet,
	// sluice.dev/abort, sluice.dev/retry) to the last value the controller acted on, so a
	// leftover annotation never acts on a later run.
	// +optional
	LastHandledRequests map[string]string `json:"lastHandledRequests,omitempty"`

	// Conditions: Ready, Reconciling, Stalled, ControlPlaneNotReady, Blocked, UnmanagedPods,
	// Drifted, NamespacesSkipped.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ControlPlaneStatus is what the controller last saw of the mesh's control plane.
type ControlPlaneStatus struct {
	// Version the control plane runs (Linkerd) or the revision whose istiod was found (Istio);
	// empty when none was found.
	// +optional
	Version string `json:"version,omitempty"`
	// Ready is true when the control plane runs the declared version and every component the
	// data plane needs (Linkerd: destination, identity, proxy-injector; Istio: the revision's
	// istiod) is available.
	// +optional
	Ready bool `json:"ready,omitempty"`
	// Message says what is missing.
	// +optional
	Message string `json:"message,omitempty"`
}

// DataPlaneWave is one wave: its namespaces, where it is and what it restarted.
type DataPlaneWave struct {
	// Namespaces of the wave.
	Namespaces []string `json:"namespaces"`
	// Phase of the wave.
	Phase WavePhase `json:"phase"`
	// Desired and Current count the wave's meshed pods, as status.desired and status.current do.
	// +optional
	Desired int32 `json:"desired"`
	// +optional
	Current int32 `json:"current"`
	// Previous maps each namespace to the version (Linkerd) or revision (Istio) it ran before
	// the wave; a rollback of the wave returns it there.
	// +optional
	Previous map[string]string `json:"previous,omitempty"`
	// StartedAt is when the wave started (its namespaces pinned to the declared version).
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// BakeStartedAt is when every meshed pod of the wave first ran the declared version.
	// +optional
	BakeStartedAt *metav1.Time `json:"bakeStartedAt,omitempty"`
	// RollbackStartedAt is when the wave started rolling back.
	// +optional
	RollbackStartedAt *metav1.Time `json:"rollbackStartedAt,omitempty"`
	// CompletedAt is when the wave succeeded, rolled back or failed.
	// +optional
	CompletedAt *metav1.Time `json:"completedAt,omitempty"`
	// LastProgressTime is when one more pod last reached the version the wave moves to; the
	// progress deadline counts from it.
	// +optional
	LastProgressTime *metav1.Time `json:"lastProgressTime,omitempty"`
	// LastCheckTime is when the analysis last ran for this wave.
	// +optional
	LastCheckTime *metav1.Time `json:"lastCheckTime,omitempty"`
	// FailedChecks of this wave's bake.
	// +optional
	FailedChecks int32 `json:"failedChecks,omitempty"`
	// Restarted counts the workloads restarted in this wave (rollback included).
	// +optional
	Restarted int32 `json:"restarted,omitempty"`
	// Evicted counts the pods evicted in this wave (rollback included).
	// +optional
	Evicted int32 `json:"evicted,omitempty"`
	// Reason is why the wave failed or was rolled back (a condition reason), and Message the
	// root cause: the PodDisruptionBudget and the pod it protects, a version pinned in a pod
	// template, a ReplicaSet's FailedCreate, the injector being unavailable, failing metrics.
	// +optional
	Reason string `json:"reason,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
	// Restarts records every workload restart of the running wave with the value it set, so a
	// restarted controller never restarts a workload twice. Cleared when the wave completes.
	// +optional
	Restarts []WorkloadRestart `json:"restarts,omitempty"`
}

// WorkloadRestart is one workload restarted by a wave (or its rollback).
type WorkloadRestart struct {
	// Kind of the workload: Deployment, StatefulSet, DaemonSet or Rollout.
	Kind string `json:"kind"`
	// Namespace and Name of the workload.
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Method used.
	Method RestartMethod `json:"method"`
	// Token identifies the restart: the value of the pod template annotation sluice.dev/restartedAt
	// (Rollout), a Rollout's spec.restartAt (RestartAt), or the same wave token recorded for
	// evictions (Evict).
	Token string `json:"token"`
	// Evicted counts the pods evicted (Evict).
	// +optional
	Evicted int32 `json:"evicted,omitempty"`
	// LastEvictedUID is the UID of the pod evicted last; the next eviction waits until it is gone
	// and its replacement is ready.
	// +optional
	LastEvictedUID string `json:"lastEvictedUID,omitempty"`
	// Done is set once every pod of the workload runs the wanted version and is ready.
	// +optional
	Done bool `json:"done,omitempty"`
}

// NamespacePhase is where one namespace of a DataPlane is.
// +kubebuilder:validation:Enum=Pending;Restarting;Baking;UpToDate;RollingBack;RolledBack;Failed;Blocked;Drifted
type NamespacePhase string

// Namespace phases.
const (
	NamespacePending     NamespacePhase = "Pending"
	NamespaceRestarting  NamespacePhase = "Restarting"
	NamespaceBaking      NamespacePhase = "Baking"
	NamespaceUpToDate    NamespacePhase = "UpToDate"
	NamespaceRollingBack NamespacePhase = "RollingBack"
	NamespaceRolledBack  NamespacePhase = "RolledBack"
	NamespaceFailed      NamespacePhase = "Failed"
	NamespaceBlocked     NamespacePhase = "Blocked"
	NamespaceDrifted     NamespacePhase = "Drifted"
)

// DataPlaneNamespace is one row of `kubectl sluice status dataplane`: a namespace of the data
// plane, its wave and where it is.
type DataPlaneNamespace struct {
	Namespace string `json:"namespace"`
	// Wave is the index of the namespace's wave.
	Wave int32 `json:"wave"`
	// Desired and Current count the namespace's meshed pods, as status.desired and
	// status.current do.
	Desired int32 `json:"desired"`
	Current int32 `json:"current"`
	// Status of the namespace.
	Status NamespacePhase `json:"status"`
	// Reason is a condition reason when the namespace is not where its wave wants it (e.g.
	// UnmanagedPods, UnmeshedPods, Blocked, RevisionTag).
	// +optional
	Reason string `json:"reason,omitempty"`
	// RevisionTag is the Istio revision tag the namespace's istio.io/rev named, resolved to the
	// revision its webhook serves.
	// +optional
	RevisionTag string `json:"revisionTag,omitempty"`
}

// SkippedNamespace is a selected namespace the DataPlane leaves alone, and why.
type SkippedNamespace struct {
	Namespace string `json:"namespace"`
	// Reason is a condition reason, e.g. ProtectedNamespace or IstioInjectionLabel.
	Reason string `json:"reason"`
	// Message explains it.
	// +optional
	Message string `json:"message,omitempty"`
}

// NamespaceMetricResult is the last verdict of one metric in one namespace.
type NamespaceMetricResult struct {
	// Namespace the metric was evaluated for.
	Namespace    string `json:"namespace"`
	MetricResult `json:",inline"`
}
