package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func init() {
	SchemeBuilder.Register(&DataPlane{}, &DataPlaneList{})
}

// DataPlane is the declared state of one mesh's data plane: the proxy version (Linkerd) or
// revision (Istio) every meshed pod must run. Changing the version is the upgrade and setting it
// back is the rollback: the controller converges the fleet on the declared version namespace by
// namespace, canary namespaces first, in analysis-gated waves, only once the mesh's control plane
// runs that version, and keeps watching for drift after convergence. One DataPlane per mesh.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=dp,categories=sluice
// +kubebuilder:printcolumn:name="Mesh",type=string,JSONPath=`.spec.mesh`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.status.version`
// +kubebuilder:printcolumn:name="Wave",type=integer,JSONPath=`.status.currentWave`
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.status.desired`
// +kubebuilder:printcolumn:name="Current",type=integer,JSONPath=`.status.current`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type DataPlane struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec DataPlaneSpec `json:"spec"`
	// Status defaults to an empty object so its counts read 0 (never blank) before the
	// controller's first write.
	// +kubebuilder:default={}
	Status DataPlaneStatus `json:"status,omitempty"`
}

// DataPlaneList is a list of DataPlanes.
//
// +kubebuilder:object:root=true
type DataPlaneList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DataPlane `json:"items"`
}

// DataPlaneSpec declares the version of a mesh's data plane and how carefully to converge on it.
//
// Admission checks what the object itself shows: the mesh's version field, canary namespaces
// inside the namespace names the selector spells out (kubernetes.io/metadata.name in matchLabels or
// In/NotIn expressions) and outside the protected namespaces. Whether a canary namespace really
// matches the selector depends on the namespaces' labels, which CEL cannot read: the controller
// checks it before the first wave (Stalled, reason CanaryNamespaceNotSelected). A second DataPlane
// for the same mesh is refused by the controller (Stalled, reason DuplicateDataPlane, naming the
// first).
//
// +kubebuilder:validation:XValidation:rule="self.mesh == 'linkerd' ? (has(self.version) && !has(self.revision)) : (has(self.revision) && !has(self.version))",message="spec: mesh linkerd declares spec.version (the proxy version), mesh istio declares spec.revision; set exactly that one"
// +kubebuilder:validation:XValidation:rule="!has(self.canaryNamespaces) || self.canaryNamespaces.all(n, !(n in ['kube-system', 'kube-public', 'kube-node-lease']) && n != (has(self.controlPlaneNamespace) ? self.controlPlaneNamespace : (self.mesh == 'linkerd' ? 'linkerd' : 'istio-system')))",message="spec.canaryNamespaces must not name kube-system, kube-public, kube-node-lease or the mesh's control-plane namespace: Sluice never restarts them"
// +kubebuilder:validation:XValidation:rule="!has(self.canaryNamespaces) || !has(self.namespaceSelector) || !has(self.namespaceSelector.matchExpressions) || self.namespaceSelector.matchExpressions.all(e, e.key != 'kubernetes.io/metadata.name' || (e.operator == 'In' ? self.canaryNamespaces.all(n, n in e.values) : (e.operator == 'NotIn' ? self.canaryNamespaces.all(n, !(n in e.values)) : e.operator != 'DoesNotExist')))",message="spec.canaryNamespaces must be inside spec.namespaceSelector: a matchExpressions entry on kubernetes.io/metadata.name excludes a canary namespace"
// +kubebuilder:validation:XValidation:rule="!has(self.canaryNamespaces) || !has(self.namespaceSelector) || !has(self.namespaceSelector.matchLabels) || !('kubernetes.io/metadata.name' in self.namespaceSelector.matchLabels) || self.canaryNamespaces.all(n, n == self.namespaceSelector.matchLabels['kubernetes.io/metadata.name'])",message="spec.canaryNamespaces must be inside spec.namespaceSelector: its matchLabels kubernetes.io/metadata.name selects another namespace"
type DataPlaneSpec struct {
	// Mesh whose data plane this declares: linkerd or istio. Immutable.
	// +kubebuilder:validation:Enum=linkerd;istio
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.mesh is immutable"
	Mesh Mesh `json:"mesh"`

	// Version is the Linkerd proxy version every meshed pod must run (mesh linkerd), as the
	// injector writes it to linkerd.io/proxy-version and as the proxy image tag, e.g. edge-26.8.3.
	// The control plane must run it first.
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_][A-Za-z0-9_.-]*$`
	// +optional
	Version string `json:"version,omitempty"`

	// Revision is the istiod revision every meshed pod must run (mesh istio), the istio.io/rev
	// value, e.g. 1-27-1. That revision's istiod must run first.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +optional
	Revision string `json:"revision,omitempty"`

	// ControlPlaneNamespace is where the mesh's control plane runs. Default linkerd (Linkerd),
	// istio-system (Istio). It is never pinned or restarted.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +optional
	ControlPlaneNamespace string `json:"controlPlaneNamespace,omitempty"`

	// NamespaceSelector selects the namespaces of the data plane. Default: the meshed namespaces,
	// i.e. those running at least one pod with the mesh's proxy, plus those whose injection is
	// enabled. kube-system, kube-public, kube-node-lease and the control-plane namespace are never
	// part of it, whatever the selector says (status lists them as skipped).
	// +optional
	NamespaceSelector *NamespaceSelector `json:"namespaceSelector,omitempty"`

	// ExcludePods selects pods (by their labels, in every selected namespace) the DataPlane leaves
	// out: neither counted nor restarted nor reported. Pods annotated sluice.dev/dataplane-exclude
	// "true" are left out too. Use it for pods Sluice cannot restart (bare pods) that may stay on
	// another version; otherwise they keep the DataPlane from being up to date.
	// +optional
	ExcludePods *metav1.LabelSelector `json:"excludePods,omitempty"`

	// CanaryNamespaces are moved first, together, as wave 0, and must bake successfully before
	// any other namespace is touched. They must be selected by NamespaceSelector.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	CanaryNamespaces []string `json:"canaryNamespaces,omitempty"`

	// Waves sizes the fleet waves after the canary wave. Default: one namespace per wave.
	// +optional
	Waves DataPlaneWaves `json:"waves,omitempty"`

	// Analysis is checked per namespace of a wave while it bakes.
	// +optional
	Analysis DataPlaneAnalysis `json:"analysis,omitempty"`

	// BakeTime is how long a wave runs on the declared version, under analysis, before the next
	// wave starts; a duration such as 10m. Default 5m.
	// +kubebuilder:default="5m"
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +optional
	BakeTime string `json:"bakeTime,omitempty"`

	// MaxUnavailable is how many workloads may be restarting at the same time. Default 1.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxUnavailable *int32 `json:"maxUnavailable,omitempty"`

	// ProgressDeadlineSeconds is how long a wave (or its rollback) may go without a single further
	// pod reaching the version it moves to. A wave past it is rolled back; a rollback past it ends
	// the run Failed, with the root cause in the Ready condition. Default 600.
	// +kubebuilder:default=600
	// +kubebuilder:validation:Minimum=1
	// +optional
	ProgressDeadlineSeconds *int32 `json:"progressDeadlineSeconds,omitempty"`

	// RequireApproval holds the fleet after the canary wave until the DataPlane is annotated
	// sluice.dev/approve-fleet with a new value (`kubectl sluice approve dataplane NAME`).
	// +optional
	RequireApproval bool `json:"requireApproval,omitempty"`

	// Windows restrict when a wave may start: outside every window the next wave waits (a wave
	// already running finishes). Empty means always.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	Windows []ProgressionWindow `json:"windows,omitempty"`

	// DriftPolicy is what happens when, after convergence, a pod comes back on another version or
	// without the proxy: Report (default) raises the Drifted condition and one notification;
	// Restart also restarts the drifted workloads onto the declared version.
	// +kubebuilder:default=Report
	// +optional
	DriftPolicy DriftPolicy `json:"driftPolicy,omitempty"`

	// Rollback is how a run back to the version the data plane last converged on (setting the
	// version back) proceeds: Canaried (default) runs it like any upgrade, canary wave, bake and
	// analysis included; Immediate moves every namespace in one wave without bake, analysis,
	// approval or windows (the control-plane check, maxUnavailable and PodDisruptionBudgets
	// still apply).
	// +kubebuilder:default=Canaried
	// +optional
	Rollback RollbackPolicy `json:"rollback,omitempty"`

	// Suspend stops all reconciliation: no wave starts, no restart, no rollback.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// DriftPolicy is what the controller does about drift after convergence.
// +kubebuilder:validation:Enum=Report;Restart
type DriftPolicy string

// Drift policies.
const (
	DriftReport  DriftPolicy = "Report"
	DriftRestart DriftPolicy = "Restart"
)

// RollbackPolicy is how a run back to the last converged version proceeds.
// +kubebuilder:validation:Enum=Canaried;Immediate
type RollbackPolicy string

// Rollback policies.
const (
	RollbackCanaried  RollbackPolicy = "Canaried"
	RollbackImmediate RollbackPolicy = "Immediate"
)

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

// DataPlaneWaves sizes the fleet waves: at most MaxNamespaces namespaces each, or Percent of
// the non-canary namespaces (rounded up). Set at most one.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.maxNamespaces) && has(self.percent))",message="spec.waves: set either maxNamespaces or percent, not both"
type DataPlaneWaves struct {
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

// DataPlaneAnalysis is the analysis of a baking wave, evaluated for each of its namespaces:
// built-in metrics read the whole namespace's inbound traffic (Linkerd response_total, Istio
// istio_requests_total), MetricTemplates see the namespace as {{ .namespace }}.
//
// +kubebuilder:validation:XValidation:rule="!has(self.metrics) || self.metrics.all(m, !has(m.compareToPrimary))",message="spec.analysis.metrics[].compareToPrimary is not supported by a DataPlane (a namespace has no primary)"
// +kubebuilder:validation:XValidation:rule="!has(self.metrics) || self.metrics.all(m, !has(m.templateRef) || has(m.templateRef.__namespace__))",message="spec.analysis.metrics[].templateRef.namespace is required (a DataPlane is cluster-scoped)"
// +kubebuilder:validation:XValidation:rule="!has(self.alerts) || self.alerts.all(a, has(a.providerRef.__namespace__))",message="spec.analysis.alerts[].providerRef.namespace is required (a DataPlane is cluster-scoped)"
type DataPlaneAnalysis struct {
	// Interval between two checks of a baking wave, a duration of at least 1s. Default 1m.
	// +kubebuilder:default="1m"
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s')",message="spec.analysis.interval must be a duration of at least 1s"
	// +optional
	Interval string `json:"interval,omitempty"`

	// Threshold is the number of failed checks of one wave that rolls it back. Default 5.
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

	// Alerts send the DataPlane's notifications (up to date, rolled back, failed, drifted) to
	// AlertProviders.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	Alerts []CanaryAlert `json:"alerts,omitempty"`
}
