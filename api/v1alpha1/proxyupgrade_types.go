package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func init() {
	SchemeBuilder.Register(&ProxyUpgrade{}, &ProxyUpgradeList{})
}

// ProxyUpgrade moves a mesh's data plane (the sidecar proxies of every meshed workload) to a new
// version, namespace by namespace: the canary namespaces first, then the rest of the fleet in
// waves. Each wave restarts every kind of workload that runs the proxy, waits until every running
// meshed pod reports the target, bakes under analysis, and rolls back when the analysis fails.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=pu,categories=sluice
// +kubebuilder:printcolumn:name="Mesh",type=string,JSONPath=`.spec.mesh`
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.status.target`
// +kubebuilder:printcolumn:name="Wave",type=integer,JSONPath=`.status.currentWave`
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.status.desired`
// +kubebuilder:printcolumn:name="Current",type=integer,JSONPath=`.status.current`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.phase`
type ProxyUpgrade struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ProxyUpgradeSpec   `json:"spec"`
	Status ProxyUpgradeStatus `json:"status,omitempty"`
}

// ProxyUpgradeList is a list of ProxyUpgrades.
//
// +kubebuilder:object:root=true
type ProxyUpgradeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ProxyUpgrade `json:"items"`
}

// ProxyUpgradeSpec is the data-plane version to reach and how carefully to get there.
//
// Admission checks what it can see in the object itself: exactly one mesh block, matching mesh;
// canary namespaces inside the namespace names the selector spells out (kubernetes.io/metadata.name
// in matchLabels or In/NotIn expressions). Whether a canary namespace really matches the selector
// depends on other objects (the namespaces' labels), which CEL cannot read: the controller checks
// it before the first wave and reports a Stalled condition (reason CanaryNamespaceNotSelected).
//
// +kubebuilder:validation:XValidation:rule="(has(self.linkerd) ? 1 : 0) + (has(self.istio) ? 1 : 0) == 1",message="spec: set exactly one mesh block, linkerd or istio"
// +kubebuilder:validation:XValidation:rule="self.mesh == 'linkerd' ? !has(self.istio) : !has(self.linkerd)",message="spec.mesh must name the mesh block that is set: spec.linkerd with mesh linkerd, spec.istio with mesh istio"
// +kubebuilder:validation:XValidation:rule="!has(self.canaryNamespaces) || !has(self.namespaceSelector) || !has(self.namespaceSelector.matchExpressions) || self.namespaceSelector.matchExpressions.all(e, e.key != 'kubernetes.io/metadata.name' || (e.operator == 'In' ? self.canaryNamespaces.all(n, n in e.values) : (e.operator == 'NotIn' ? self.canaryNamespaces.all(n, !(n in e.values)) : e.operator != 'DoesNotExist')))",message="spec.canaryNamespaces must be inside spec.namespaceSelector: a matchExpressions entry on kubernetes.io/metadata.name excludes a canary namespace"
// +kubebuilder:validation:XValidation:rule="!has(self.canaryNamespaces) || !has(self.namespaceSelector) || !has(self.namespaceSelector.matchLabels) || !('kubernetes.io/metadata.name' in self.namespaceSelector.matchLabels) || self.canaryNamespaces.all(n, n == self.namespaceSelector.matchLabels['kubernetes.io/metadata.name'])",message="spec.canaryNamespaces must be inside spec.namespaceSelector: its matchLabels kubernetes.io/metadata.name selects another namespace"
type ProxyUpgradeSpec struct {
	// Mesh whose data plane is upgraded: linkerd or istio. Immutable.
	// +kubebuilder:validation:Enum=linkerd;istio
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.mesh is immutable"
	Mesh Mesh `json:"mesh"`

	// Linkerd is the target of a Linkerd upgrade (mesh linkerd).
	// +optional
	Linkerd *LinkerdProxyUpgrade `json:"linkerd,omitempty"`

	// Istio is the target of an Istio revision upgrade (mesh istio).
	// +optional
	Istio *IstioProxyUpgrade `json:"istio,omitempty"`

	// NamespaceSelector selects the namespaces to upgrade. Default: the meshed namespaces, i.e.
	// those running at least one pod with the mesh's proxy, plus those whose injection is enabled
	// (Linkerd: linkerd.io/inject=enabled; Istio: istio.io/rev set to the previous or target
	// revision, or istio-injection=enabled), except the mesh's control-plane namespace.
	// +optional
	NamespaceSelector *NamespaceSelector `json:"namespaceSelector,omitempty"`

	// CanaryNamespaces are upgraded first, together, as wave 0, and must bake successfully before
	// any other namespace is touched. They must be selected by NamespaceSelector.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	CanaryNamespaces []string `json:"canaryNamespaces,omitempty"`

	// Waves sizes the fleet waves after the canary wave. Default: one namespace per wave.
	// +optional
	Waves ProxyUpgradeWaves `json:"waves,omitempty"`

	// Analysis is checked per namespace of a wave while it bakes.
	// +optional
	Analysis ProxyUpgradeAnalysis `json:"analysis,omitempty"`

	// BakeTime is how long a wave runs on the target, under analysis, before the next wave
	// starts; a duration such as 10m. Default 5m.
	// +kubebuilder:default="5m"
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +optional
	BakeTime string `json:"bakeTime,omitempty"`

	// MaxUnavailable is how many workloads (Deployments, StatefulSets, DaemonSets) may be
	// restarting at the same time. Default 1.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxUnavailable *int32 `json:"maxUnavailable,omitempty"`

	// ProgressDeadlineSeconds is how long a wave may go without a single further pod reaching the
	// target (or, rolling back, the previous version) before it is rolled back. Default 600.
	// +kubebuilder:default=600
	// +kubebuilder:validation:Minimum=1
	// +optional
	ProgressDeadlineSeconds *int32 `json:"progressDeadlineSeconds,omitempty"`

	// RequireApproval holds the fleet after the canary wave until the ProxyUpgrade is annotated
	// sluice.dev/approve-fleet=true.
	// +optional
	RequireApproval bool `json:"requireApproval,omitempty"`

	// Windows restrict when a wave may start: outside every window the next wave waits (a wave
	// already running finishes). Empty means always.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	Windows []ProgressionWindow `json:"windows,omitempty"`

	// Suspend stops all reconciliation: no wave starts, no restart, no rollback.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// NamespaceSelector selects namespaces by their labels, like a metav1.LabelSelector (the same
// fields and semantics) with bounded sizes, so admission can check the canary namespaces against
// the namespace names it spells out.
type NamespaceSelector struct {
	// MatchLabels: every label must match.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	MatchLabels map[string]string `json:"matchLabels,omitempty"`
	// MatchExpressions: every requirement must match.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	MatchExpressions []NamespaceSelectorRequirement `json:"matchExpressions,omitempty"`
}

// NamespaceSelectorRequirement is a label requirement (metav1.LabelSelectorRequirement).
type NamespaceSelectorRequirement struct {
	// Key is the label key.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	Key string `json:"key"`
	// Operator is In, NotIn, Exists or DoesNotExist.
	// +kubebuilder:validation:Enum=In;NotIn;Exists;DoesNotExist
	Operator metav1.LabelSelectorOperator `json:"operator"`
	// Values for In and NotIn.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	Values []string `json:"values,omitempty"`
}

// LabelSelector returns s as a metav1.LabelSelector.
func (s *NamespaceSelector) LabelSelector() *metav1.LabelSelector {
	if s == nil {
		return nil
	}
	out := &metav1.LabelSelector{MatchLabels: s.MatchLabels}
	for _, r := range s.MatchExpressions {
		out.MatchExpressions = append(out.MatchExpressions, metav1.LabelSelectorRequirement{
			Key: r.Key, Operator: r.Operator, Values: r.Values})
	}
	return out
}

// LinkerdProxyUpgrade is the Linkerd proxy version to reach.
type LinkerdProxyUpgrade struct {
	// ProxyVersion is the target proxy version, as the injector writes it to
	// linkerd.io/proxy-version and as the proxy image tag, e.g. edge-26.8.3 or stable-2.14.10.
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_][A-Za-z0-9_.-]*$`
	ProxyVersion string `json:"proxyVersion"`
}

// IstioProxyUpgrade moves namespaces from one istiod revision to another.
//
// +kubebuilder:validation:XValidation:rule="self.revision != self.previousRevision",message="spec.istio.revision must differ from spec.istio.previousRevision"
type IstioProxyUpgrade struct {
	// Revision is the target istiod revision (the istio.io/rev label value), e.g. 1-27-1.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Revision string `json:"revision"`
	// PreviousRevision is the revision the namespaces run now and return to on rollback.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	PreviousRevision string `json:"previousRevision"`
}

// ProxyUpgradeWaves sizes the fleet waves: at most MaxNamespaces namespaces each, or Percent of
// the non-canary namespaces (rounded up). Set at most one.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.maxNamespaces) && has(self.percent))",message="spec.waves: set either maxNamespaces or percent, not both"
type ProxyUpgradeWaves struct {
	// MaxNamespaces per fleet wave.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxNamespaces *int32 `json:"maxNamespaces,omitempty"`
	// Percent of the non-canary namespaces per fleet wave (1–100), rounded up.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	Percent *int32 `json:"percent,omitempty"`
}

// ProxyUpgradeAnalysis is the analysis of a baking wave, evaluated for each of its namespaces:
// built-in metrics read the whole namespace's inbound traffic (Linkerd response_total, Istio
// istio_requests_total), MetricTemplates see the namespace as {{ .namespace }}.
//
// +kubebuilder:validation:XValidation:rule="!has(self.metrics) || self.metrics.all(m, !has(m.compareToPrimary))",message="spec.analysis.metrics[].compareToPrimary is not supported by proxy upgrades (a namespace has no primary)"
// +kubebuilder:validation:XValidation:rule="!has(self.metrics) || self.metrics.all(m, !has(m.templateRef) || has(m.templateRef.__namespace__))",message="spec.analysis.metrics[].templateRef.namespace is required (a ProxyUpgrade is cluster-scoped)"
// +kubebuilder:validation:XValidation:rule="!has(self.alerts) || self.alerts.all(a, has(a.providerRef.__namespace__))",message="spec.analysis.alerts[].providerRef.namespace is required (a ProxyUpgrade is cluster-scoped)"
type ProxyUpgradeAnalysis struct {
	// Interval between two checks of a baking wave, a duration of at least 1s. Default 1m.
	// +kubebuilder:default="1m"
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s')",message="spec.analysis.interval must be a duration of at least 1s"
	// +optional
	Interval string `json:"interval,omitempty"`

	// Threshold is the number of failed checks of one wave that rolls it back and stops the
	// upgrade. Default 5.
	// +kubebuilder:default=5
	// +kubebuilder:validation:Minimum=1
	// +optional
	Threshold int32 `json:"threshold,omitempty"`

	// MetricsServer is the Prometheus address for built-in metrics and MetricTemplates without an
	// address. Empty means the controller's --metrics-server flag.
	// +kubebuilder:validation:Pattern=`^https?://`
	// +optional
	MetricsServer string `json:"metricsServer,omitempty"`

	// Metrics checked for every namespace of a baking wave; a check fails when any metric of any
	// namespace fails.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	Metrics []CanaryMetric `json:"metrics,omitempty"`

	// Alerts send the upgrade's notifications (succeeded, failed) to AlertProviders.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	Alerts []CanaryAlert `json:"alerts,omitempty"`
}

// ProxyUpgradePhase is where a ProxyUpgrade is.
// +kubebuilder:validation:Enum="";Pending;Waiting;Progressing;RollingBack;Succeeded;Failed
type ProxyUpgradePhase string

// ProxyUpgrade phases.
const (
	// ProxyUpgradePending: the waves are planned and not-yet-upgraded namespaces pinned.
	ProxyUpgradePending ProxyUpgradePhase = "Pending"
	// ProxyUpgradeWaiting: the next wave is due but held (window closed, approval missing).
	ProxyUpgradeWaiting ProxyUpgradePhase = "Waiting"
	// ProxyUpgradeProgressing: a wave is restarting workloads or baking.
	ProxyUpgradeProgressing ProxyUpgradePhase = "Progressing"
	// ProxyUpgradeRollingBack: a wave failed and is returning to the previous version.
	ProxyUpgradeRollingBack ProxyUpgradePhase = "RollingBack"
	// ProxyUpgradeSucceeded: every wave runs the target and baked.
	ProxyUpgradeSucceeded ProxyUpgradePhase = "Succeeded"
	// ProxyUpgradeFailed: a wave was rolled back; later waves never start.
	ProxyUpgradeFailed ProxyUpgradePhase = "Failed"
)

// WavePhase is where one wave is.
// +kubebuilder:validation:Enum=Pending;Restarting;Baking;Succeeded;RollingBack;RolledBack
type WavePhase string

// Wave phases.
const (
	WavePending     WavePhase = "Pending"
	WaveRestarting  WavePhase = "Restarting"
	WaveBaking      WavePhase = "Baking"
	WaveSucceeded   WavePhase = "Succeeded"
	WaveRollingBack WavePhase = "RollingBack"
	WaveRolledBack  WavePhase = "RolledBack"
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
	// PodDisruptionBudget, a workload that restarted and still runs the old proxy).
	UpdateAttemptBlocked UpdateAttemptResult = "Blocked"
)

// RestartMethod is how a workload's pods are replaced.
// +kubebuilder:validation:Enum=Rollout;Evict
type RestartMethod string

// Restart methods.
const (
	// RestartRollout sets the pod template annotation sluice.dev/restartedAt (what `kubectl
	// rollout restart` does), for Deployments and rolling DaemonSets and StatefulSets.
	RestartRollout RestartMethod = "Rollout"
	// RestartEvict evicts the pods one at a time through the Eviction API (PodDisruptionBudgets
	// apply), for OnDelete StatefulSets and DaemonSets and other controllers.
	RestartEvict RestartMethod = "Evict"
)

// ProxyUpgradeStatus is the observed state of a ProxyUpgrade. It is the controller's only memory:
// a restarted controller resumes from it and never restarts a workload twice in a wave.
type ProxyUpgradeStatus struct {
	// ObservedGeneration is the generation fully handled by the controller.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Phase of the upgrade.
	// +optional
	Phase ProxyUpgradePhase `json:"phase,omitempty"`

	// Target is the proxy version (Linkerd) or revision (Istio) this run moves to.
	// +optional
	Target string `json:"target,omitempty"`

	// CurrentWave is the index in Waves of the wave running or last run (0: the canary wave).
	// +optional
	CurrentWave int32 `json:"currentWave"`

	// Desired is the number of running meshed pods in the selected namespaces (Job pods and
	// finished pods excluded); Current is how many of them run the target.
	// +optional
	Desired int32 `json:"desired"`
	// +optional
	Current int32 `json:"current"`

	// Waves are planned when the run starts: the canary namespaces first, then the rest in a
	// stable order.
	// +optional
	Waves []ProxyUpgradeWave `json:"waves,omitempty"`

	// Skipped lists selected namespaces the upgrade cannot move, with the reason (e.g. Istio's
	// istio-injection=enabled, which wins over istio.io/rev).
	// +optional
	// +listType=map
	// +listMapKey=namespace
	Skipped []SkippedNamespace `json:"skipped,omitempty"`

	// Analysis holds the last verdict of every metric in every namespace of the baking wave.
	// +optional
	Analysis []NamespaceMetricResult `json:"analysis,omitempty"`

	// LastTransitionTime is when Phase last changed.
	// +optional
	LastTransitionTime *metav1.Time `json:"lastTransitionTime,omitempty"`

	// Notifications lists the dedup keys of notifications already sent in this run.
	// +optional
	// +listType=set
	Notifications []string `json:"notifications,omitempty"`

	// Conditions: Ready, Reconciling, Stalled, NamespacesSkipped.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ProxyUpgradeWave is one wave: its namespaces, where it is and what it restarted.
type ProxyUpgradeWave struct {
	// Namespaces of the wave.
	Namespaces []string `json:"namespaces"`
	// Phase of the wave.
	Phase WavePhase `json:"phase"`
	// Desired is the number of running meshed pods in the wave's namespaces; Current is how many
	// run the target.
	// +optional
	Desired int32 `json:"desired"`
	// +optional
	Current int32 `json:"current"`
	// Previous maps each namespace to the version (Linkerd) or revision (Istio) it ran before
	// the wave; a rollback returns it there.
	// +optional
	Previous map[string]string `json:"previous,omitempty"`
	// StartedAt is when the wave started (namespaces switched to the target).
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// BakeStartedAt is when every running meshed pod of the wave first reported the target.
	// +optional
	BakeStartedAt *metav1.Time `json:"bakeStartedAt,omitempty"`
	// RollbackStartedAt is when the wave started rolling back.
	// +optional
	RollbackStartedAt *metav1.Time `json:"rollbackStartedAt,omitempty"`
	// CompletedAt is when the wave succeeded or finished rolling back.
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
	// LastUpdateAttempt is when the controller last pinned, restarted or evicted for this wave.
	// +optional
	LastUpdateAttempt *metav1.Time `json:"lastUpdateAttempt,omitempty"`
	// LastUpdateAttemptResult is the outcome of that attempt.
	// +optional
	LastUpdateAttemptResult UpdateAttemptResult `json:"lastUpdateAttemptResult,omitempty"`
	// LastUpdateAttemptMessage explains it.
	// +optional
	LastUpdateAttemptMessage string `json:"lastUpdateAttemptMessage,omitempty"`
	// Restarts records every workload restart of the running wave with the value it set, so a
	// restarted controller never restarts a workload twice. Cleared when the wave completes.
	// +optional
	Restarts []WorkloadRestart `json:"restarts,omitempty"`
}

// WorkloadRestart is one workload restarted by a wave (or its rollback).
type WorkloadRestart struct {
	// Kind of the workload: Deployment, StatefulSet, DaemonSet, or the pods' controller kind.
	Kind string `json:"kind"`
	// Namespace and Name of the workload.
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Method used.
	Method RestartMethod `json:"method"`
	// Token identifies the restart: the value of the pod template annotation sluice.dev/restartedAt
	// (Rollout), or the same wave token recorded for evictions (Evict).
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

// SkippedNamespace is a selected namespace the upgrade leaves alone, and why.
type SkippedNamespace struct {
	Namespace string `json:"namespace"`
	// Reason is a condition reason, e.g. IstioInjectionLabel.
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
