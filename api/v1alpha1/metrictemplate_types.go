package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MetricTemplate is a reusable PromQL query with its metrics server. The query is a Go text/template
// rendered per check with the variables name, namespace, target, service, interval and variables
// (the Canary metric's templateVariables). Every value is escaped for a PromQL string literal.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=mt,categories=sluice
// +kubebuilder:printcolumn:name="Provider",type=string,JSONPath=`.spec.provider.type`
// +kubebuilder:printcolumn:name="Address",type=string,JSONPath=`.spec.provider.address`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
type MetricTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec MetricTemplateSpec `json:"spec"`
	// +optional
	Status MetricTemplateStatus `json:"status,omitempty"`
}

// MetricTemplateStatus reports whether the template's query is valid PromQL, checked when the
// template is applied (rendered with placeholder values, parsed with Prometheus's own parser),
// not at the first check of a run.
type MetricTemplateStatus struct {
	// ObservedGeneration is the generation the conditions describe.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Ready (True: the query renders and parses; False with reason InvalidQuery and
	// the parser's message).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// MetricTemplateList is a list of MetricTemplates.
//
// +kubebuilder:object:root=true
type MetricTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MetricTemplate `json:"items"`
}

// MetricTemplateSpec is a query and where to run it.
type MetricTemplateSpec struct {
	// Provider is the metrics server.
	// +optional
	Provider MetricTemplateProvider `json:"provider,omitempty"`
	// Query is a PromQL Go text/template that must return a single series or scalar, e.g.
	// sum(rate(http_requests_total{namespace="{{ .namespace }}",status!~"5.."}[{{ .interval }}])).
	// Its actions may only print a value: {{ .name }}, {{ .namespace }}, {{ .target }},
	// {{ .service }}, {{ .interval }} or {{ .variables.KEY }} (trim markers {{- -}} and comments
	// {{/* */}} allowed); range, if, with, define, template, block, function calls, pipelines and
	// variables are refused, here and again before every rendering (Ready=False InvalidQuery). At
	// most 4096 bytes; rendered, at most 16 KiB. A template outside the controller's namespace is
	// a tenant's: by default the manager confines its query to the Canary's namespace (see
	// docs/metrics.md).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	// +kubebuilder:validation:XValidation:rule="self.matches('^([^{]|[{][^{]|[{]$|[{][{](-[[:space:]])?[[:space:]]*[.](name|namespace|target|service|interval|variables[.][A-Za-z_][A-Za-z0-9_]*)[[:space:]]*([[:space:]]-)?[}][}]|[{][{](-[[:space:]])?/[*]([^*]|[*]+[^*/])*[*]+/([[:space:]]-)?[}][}])*$')",message="query: a template action may only print {{ .name }}, {{ .namespace }}, {{ .target }}, {{ .service }}, {{ .interval }} or {{ .variables.KEY }} (no range, if, with, define, template, block, function calls, pipelines or variables)"
	Query string `json:"query"`
}

// MetricTemplateProvider is a metrics server. Credentials (secretRef) go only to the template's
// own address, never to a Canary's metricsServer or the controller's default, so a template with
// secretRef must name its address.
//
// +kubebuilder:validation:XValidation:rule="!has(self.secretRef) || (has(self.address) && size(self.address) > 0)",message="provider.secretRef needs provider.address: credentials are sent only to the template's own address",fieldPath=".address"
type MetricTemplateProvider struct {
	// Type of the server. Default prometheus.
	// +kubebuilder:validation:Enum=prometheus
	// +kubebuilder:default=prometheus
	// +optional
	Type string `json:"type,omitempty"`
	// Address of the server, e.g. http://prometheus.monitoring:9090. Empty means the Canary's
	// spec.metricsServer, else the controller's --metrics-server flag; required with secretRef.
	// +kubebuilder:validation:Pattern=`^https?://`
	// +optional
	Address string `json:"address,omitempty"`
	// SecretRef names a Secret in the template's namespace with credentials: key "token" (bearer
	// token) or keys "username" and "password" (basic auth). They are sent only to Address (which
	// must then be set). Whoever may write MetricTemplates in a namespace may send these keys of
	// any Secret there to an address of their choice: grant it like reading Secrets.
	// +optional
	SecretRef *corev1.LocalObjectReference `json:"secretRef,omitempty"`
	// InsecureSkipVerify turns off TLS certificate verification.
	// +optional
	InsecureSkipVerify bool `json:"insecureSkipVerify,omitempty"`
}
