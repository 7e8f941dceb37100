package v1alpha1

// Types of the Canary fields Flagger users rely on beyond weighted canaries: autoscalers,
// session affinity, URI rewrites and the metadata of the generated Services.

// Autoscaler kinds an AutoscalerReference may name.
const (
	// AutoscalerHPA is an autoscaling/v2 HorizontalPodAutoscaler.
	AutoscalerHPA = "HorizontalPodAutoscaler"
	// AutoscalerScaledObject is a KEDA keda.sh/v1alpha1 ScaledObject.
	AutoscalerScaledObject = "ScaledObject"
)

// AutoscalerReference names the autoscaler of the target. Sluice creates <name>-primary, a copy
// targeting the primary Deployment, and keeps the target's own autoscaler for the canary: it
// scales the canary only during a run.
//
// +kubebuilder:validation:XValidation:rule="self.kind != 'HorizontalPodAutoscaler' || self.apiVersion == 'autoscaling/v2'",message="autoscalerRef.apiVersion must be autoscaling/v2 for a HorizontalPodAutoscaler"
// +kubebuilder:validation:XValidation:rule="self.kind != 'ScaledObject' || self.apiVersion == 'keda.sh/v1alpha1'",message="autoscalerRef.apiVersion must be keda.sh/v1alpha1 for a ScaledObject"
// +kubebuilder:validation:XValidation:rule="!has(self.primaryScalerQueries) || self.kind == 'ScaledObject'",message="autoscalerRef.primaryScalerQueries applies to a ScaledObject only"
type AutoscalerReference struct {
	// APIVersion of the autoscaler: autoscaling/v2 (HorizontalPodAutoscaler) or keda.sh/v1alpha1
	// (ScaledObject).
	// +kubebuilder:validation:Enum=autoscaling/v2;keda.sh/v1alpha1
	APIVersion string `json:"apiVersion"`
	// Kind of the autoscaler.
	// +kubebuilder:validation:Enum=HorizontalPodAutoscaler;ScaledObject
	Kind string `json:"kind"`
	// Name of the autoscaler in the Canary's namespace.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// PrimaryScalerQueries replaces the query of the primary ScaledObject's trigger of that name
	// (KEDA triggers often name the canary's workload in their query).
	// +optional
	// +kubebuilder:validation:MaxProperties=16
	PrimaryScalerQueries map[string]string `json:"primaryScalerQueries,omitempty"`
	// PrimaryScalerReplicas overrides the replica bounds of the primary's autoscaler. Default: the
	// target autoscaler's.
	// +optional
	PrimaryScalerReplicas *ScalerReplicas `json:"primaryScalerReplicas,omitempty"`
}

// ScalerReplicas bounds an autoscaler.
//
// +kubebuilder:validation:XValidation:rule="!has(self.minReplicas) || !has(self.maxReplicas) || self.minReplicas <= self.maxReplicas",message="primaryScalerReplicas.minReplicas must not exceed maxReplicas"
type ScalerReplicas struct {
	// +kubebuilder:validation:Minimum=1
	// +optional
	MinReplicas *int32 `json:"minReplicas,omitempty"`
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxReplicas *int32 `json:"maxReplicas,omitempty"`
}

// SessionAffinity keeps a user who reached the canary on the canary for the rest of the run: the
// canary's responses set a cookie, and requests carrying it go to the canary whatever the weights.
// After promotion or rollback the cookie rule is removed.
type SessionAffinity struct {
	// CookieName is the name of the cookie, e.g. sluice-canary.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9!#$%&'*+.^_|~-]+$`
	CookieName string `json:"cookieName"`
	// MaxAge of the cookie in seconds. Default 86400 (a day).
	// +kubebuilder:default=86400
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxAge int32 `json:"maxAge,omitempty"`
}

// Rewrite types of a Gateway API URLRewrite path modifier.
const (
	RewriteReplaceFullPath    = "ReplaceFullPath"
	RewriteReplacePrefixMatch = "ReplacePrefixMatch"
)

// HTTPRewrite rewrites the request before it reaches the backends.
//
// +kubebuilder:validation:XValidation:rule="has(self.uri) || has(self.authority)",message="service.rewrite: set uri, authority or both"
type HTTPRewrite struct {
	// URI replaces the request path: the whole path, or the matched prefix with type
	// ReplacePrefixMatch (Istio always replaces the matched prefix, as its rewrite does).
	// +optional
	// +kubebuilder:validation:MinLength=1
	URI string `json:"uri,omitempty"`
	// Authority replaces the Host (authority) header.
	// +optional
	// +kubebuilder:validation:MinLength=1
	Authority string `json:"authority,omitempty"`
	// Type of the path rewrite (Gateway API provider only): ReplaceFullPath (default) or
	// ReplacePrefixMatch.
	// +kubebuilder:validation:Enum=ReplaceFullPath;ReplacePrefixMatch
	// +optional
	Type string `json:"type,omitempty"`
}

// ServiceMetadata is added to one of the Services Sluice generates.
type ServiceMetadata struct {
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}
