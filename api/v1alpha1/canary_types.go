package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// Provider names a traffic provider that shifts weights between primary and canary.
// +kubebuilder:validation:Enum=gatewayapi;istio;kubernetes
type Provider string

const (
	// ProviderGatewayAPI drives a Gateway API HTTPRoute. A parentRef of kind Gateway routes
	// north-south traffic; a parentRef of kind Service routes east-west mesh traffic (GAMMA), which is
	// how Linkerd routes.
	ProviderGatewayAPI Provider = "gatewayapi"
	// ProviderIstio drives an Istio VirtualService and DestinationRules.
	ProviderIstio Provider = "istio"
	// ProviderKubernetes needs no mesh or gateway: it runs blue/green by switching the selector of
	// the apex Service from the primary's pods to the canary's and back (L4, ClusterIP).
	ProviderKubernetes Provider = "kubernetes"
)

// Mesh names the mesh or proxy whose metrics built-in metrics read.
type Mesh string

// Meshes with built-in metric queries.
const (
	MeshIstio   Mesh = "istio"
	MeshLinkerd Mesh = "linkerd"
	MeshEnvoy   Mesh = "envoy"
)

// Canary is a progressive delivery of one workload: when the target's pod template (or a ConfigMap
// or Secret it references) changes, Sluice shifts traffic to the new version step by step, runs
// analysis at every step, and promotes it or rolls it back.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=cn,categories=sluice
// +kubebuilder:selectablefield:JSONPath=`.spec.targetRef.name`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Weight",type=integer,JSONPath=`.status.canaryWeight`
// +kubebuilder:printcolumn:name="FailedChecks",type=integer,JSONPath=`.status.failedChecks`
// +kubebuilder:printcolumn:name="LastTransition",type=string,JSONPath=`.status.lastTransitionTime`
type Canary struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   CanarySpec   `json:"spec"`
	Status CanaryStatus `json:"status,omitempty"`
}

// CanaryList is a list of Canaries.
//
// +kubebuilder:object:root=true
type CanaryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Canary `json:"items"`
}

// CanarySpec is the desired delivery of one workload.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.provider) && self.provider == 'kubernetes') || (has(self.analysis.iterations) && self.analysis.iterations > 0 && !has(self.analysis.match))",message="provider kubernetes runs blue/green only: set analysis.iterations, without analysis.match"
// +kubebuilder:validation:XValidation:rule="!(has(self.provider) && self.provider == 'kubernetes') || !(has(self.service.gatewayRefs) || has(self.service.hosts) || has(self.service.gateways) || has(self.service.routeRef) || has(self.service.match) || has(self.service.retries) || has(self.service.timeout) || has(self.service.backendTimeout) || has(self.service.headers) || has(self.service.corsPolicy) || has(self.service.trafficPolicy) || has(self.service.rewrite))",messageExpression="'spec.service.' + (has(self.service.gatewayRefs) ? 'gatewayRefs' : has(self.service.hosts) ? 'hosts' : has(self.service.gateways) ? 'gateways' : has(self.service.routeRef) ? 'routeRef' : has(self.service.match) ? 'match' : has(self.service.retries) ? 'retries' : has(self.service.timeout) ? 'timeout' : has(self.service.backendTimeout) ? 'backendTimeout' : has(self.service.headers) ? 'headers' : has(self.service.corsPolicy) ? 'corsPolicy' : has(self.service.trafficPolicy) ? 'trafficPolicy' : 'rewrite') + ' needs an L7 provider (gatewayapi or istio); provider kubernetes only switches the apex Service'"
// +kubebuilder:validation:XValidation:rule="!(has(self.provider) && self.provider == 'kubernetes') || !((has(self.analysis.mirror) && self.analysis.mirror) || has(self.analysis.sessionAffinity))",messageExpression="(has(self.analysis.sessionAffinity) ? 'analysis.sessionAffinity' : 'analysis.mirror') + ' needs an L7 provider (gatewayapi or istio); provider kubernetes only switches the apex Service'"
// +kubebuilder:validation:XValidation:rule="(!has(self.provider) || self.provider == 'gatewayapi') || !has(self.service.backendTimeout)",message="spec.service.backendTimeout is a Gateway API field: it needs provider gatewayapi"
// +kubebuilder:validation:XValidation:rule="(!has(self.provider) || self.provider == 'gatewayapi') || !has(self.service.rewrite) || !has(self.service.rewrite.type)",message="spec.service.rewrite.type is a Gateway API field: Istio always replaces the matched prefix"
// +kubebuilder:validation:XValidation:rule="(has(self.provider) && self.provider != 'gatewayapi') || !has(self.service.gateways)",message="spec.service.gateways is an Istio field (gateways of the generated VirtualService): provider gatewayapi would ignore it; use spec.service.gatewayRefs"
// +kubebuilder:validation:XValidation:rule="!has(self.provider) || self.provider != 'istio' || !has(self.service.gatewayRefs)",message="spec.service.gatewayRefs is a Gateway API field (parentRefs of the generated HTTPRoute): provider istio would ignore it; use spec.service.gateways"
// +kubebuilder:validation:XValidation:rule="(has(self.provider) && self.provider != 'gatewayapi') || !(has(self.service.retries) || has(self.service.corsPolicy) || has(self.service.trafficPolicy))",messageExpression="'spec.service.' + (has(self.service.retries) ? 'retries (HTTPRoute retries are experimental-channel only)' : has(self.service.corsPolicy) ? 'corsPolicy' : 'trafficPolicy (a DestinationRule setting)') + ' is rendered by provider istio only; provider gatewayapi would ignore it'"
// +kubebuilder:validation:XValidation:rule="self.targetRef.kind != 'DaemonSet' || (has(self.analysis.iterations) && self.analysis.iterations > 0 && !has(self.analysis.match))",message="a DaemonSet target runs blue/green (a DaemonSet cannot be split by weight): set analysis.iterations, without analysis.match"
// +kubebuilder:validation:XValidation:rule="!has(self.autoscalerRef) || self.targetRef.kind == 'Deployment'",message="spec.autoscalerRef applies to Deployment targets only"
// +kubebuilder:validation:XValidation:rule="!(has(self.provider) && self.provider == 'kubernetes') || has(self.mesh) || !has(self.analysis.metrics) || self.analysis.metrics.all(m, has(m.templateRef) || has(m.query))",message="provider kubernetes has no proxy metrics of its own: built-in metrics need spec.mesh (istio, linkerd or envoy: whose proxies serve the pods), or use a MetricTemplate"
type CanarySpec struct {
	// TargetRef is the workload whose pod template changes start a canary run. Sluice creates
	// <name>-primary from it and keeps the target itself as the canary.
	TargetRef TargetReference `json:"targetRef"`

	// Provider shifts the traffic. Default gatewayapi.
	// +kubebuilder:default=gatewayapi
	// +optional
	Provider Provider `json:"provider,omitempty"`

	// Mesh is the mesh (or proxy) whose metrics the built-in metrics query: istio
	// (istio_requests_total), linkerd (response_total) or envoy (envoy_cluster_upstream_rq, as
	// Envoy Gateway exports). Default: istio with provider istio, envoy with provider gatewayapi.
	// +kubebuilder:validation:Enum=istio;linkerd;envoy
	// +optional
	Mesh Mesh `json:"mesh,omitempty"`

	// MetricsServer is the Prometheus address for built-in metrics, e.g. http://prometheus:9090.
	// Empty means the controller's --metrics-server flag.
	// +optional
	MetricsServer string `json:"metricsServer,omitempty"`

	// AutoscalerRef names the target's HorizontalPodAutoscaler or KEDA ScaledObject. Sluice gives
	// the primary its own copy, scales the primary up to the canary's ready replicas before
	// shifting all traffic to it, and lets the target's autoscaler act only during a run.
	// +optional
	AutoscalerRef *AutoscalerReference `json:"autoscalerRef,omitempty"`

	// Service describes the apex Service and the routing Sluice generates or edits.
	Service CanaryService `json:"service"`

	// Analysis defines the steps, the checks at every step and the rollback threshold.
	Analysis CanaryAnalysis `json:"analysis"`

	// ProgressDeadlineSeconds is how long the canary or primary may take to become ready, or a run
	// may go without progress, before it is rolled back. Default 600.
	// +kubebuilder:default=600
	// +kubebuilder:validation:Minimum=1
	// +optional
	ProgressDeadlineSeconds *int32 `json:"progressDeadlineSeconds,omitempty"`

	// SkipAnalysis promotes a new revision at once, without traffic steps or analysis.
	// +optional
	SkipAnalysis bool `json:"skipAnalysis,omitempty"`

	// Suspend pauses the Canary (kubectl sluice pause). With traffic on the canary during a run
	// (Progressing or WaitingPromotion) it holds only the advance: checks keep running every
	// interval and the failed-check threshold and consecutive-error limit still roll a failing
	// canary back; the progress deadline waits for this deliberate pause (after a resume it counts
	// from the last check) unless a stall holds the run. Otherwise (no traffic on the canary, or
	// a promotion in flight) it stops all reconciliation; traffic stays as it is. A promote or
	// retry request made while paused acts once resumed; an abort acts at once while checks run.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// RevertOnDeletion restores the target (replicas and routing) when the Canary is deleted and
	// removes the primary objects.
	// +optional
	RevertOnDeletion bool `json:"revertOnDeletion,omitempty"`

	// Windows restrict when a run may advance a step: outside every window the Canary holds its
	// weight. Empty means always.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	Windows []ProgressionWindow `json:"windows,omitempty"`
}

// TargetReference names the workload a Canary delivers.
type TargetReference struct {
	// APIVersion of the target. Default apps/v1.
	// +kubebuilder:default="apps/v1"
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`
	// Kind of the target: Deployment, or DaemonSet (blue/green runs only).
	// +kubebuilder:validation:Enum=Deployment;DaemonSet
	Kind string `json:"kind"`
	// Name of the target in the Canary's namespace.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// CanaryService describes the apex Service and its routing.
//
// +kubebuilder:validation:XValidation:rule="!has(self.routeRef) || !(has(self.rewrite) || has(self.backendTimeout))",message="spec.service.rewrite and backendTimeout shape the generated route: with routeRef, write them in your route"
// +kubebuilder:validation:XValidation:rule="!has(self.timeout) || !has(self.backendTimeout) || !self.timeout.matches('^([0-9]+(\\\\.[0-9]+)?(ms|s|m|h))+$') || !self.backendTimeout.matches('^([0-9]+(\\\\.[0-9]+)?(ms|s|m|h))+$') || duration(self.backendTimeout) <= duration(self.timeout)",message="spec.service.backendTimeout must not exceed spec.service.timeout"
type CanaryService struct {
	// Name of the apex Service. Default: the target's name. Sluice creates <name>, <name>-primary
	// and <name>-canary.
	// +optional
	Name string `json:"name,omitempty"`
	// Port the Services expose.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port"`
	// TargetPort on the pods. Default: Port.
	// +optional
	TargetPort *intstr.IntOrString `json:"targetPort,omitempty"`
	// PortName of the Service port. Default http.
	// +optional
	PortName string `json:"portName,omitempty"`
	// AppProtocol of the Service port, e.g. http or kubernetes.io/h2c.
	// +optional
	AppProtocol *string `json:"appProtocol,omitempty"`
	// PortDiscovery adds every other container port of the target's pod template to the
	// Services, besides Port.
	// +optional
	PortDiscovery bool `json:"portDiscovery,omitempty"`
	// Headless makes the primary and canary Services headless (clusterIP None).
	// +optional
	Headless bool `json:"headless,omitempty"`
	// Apex, Primary and Canary metadata are added to the apex, primary and canary Services.
	// +optional
	Apex *ServiceMetadata `json:"apex,omitempty"`
	// +optional
	Primary *ServiceMetadata `json:"primary,omitempty"`
	// +optional
	Canary *ServiceMetadata `json:"canary,omitempty"`

	// GatewayRefs are the parents of the generated HTTPRoute (Gateway API provider): kind Gateway
	// for north-south traffic, kind Service (group "") for east-west mesh traffic. Parents in
	// another namespace only if the controller allows them (--allowed-route-parents).
	// +optional
	// +kubebuilder:validation:MaxItems=16
	GatewayRefs []gwv1.ParentReference `json:"gatewayRefs,omitempty"`
	// Hosts of the generated route, besides the apex service (HTTPRoute hostnames, VirtualService
	// hosts). Names of the Canary's namespace, or hostnames the controller allows
	// (--allowed-route-hostnames); anything else stalls the Canary (RouteRefused).
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=253
	Hosts []string `json:"hosts,omitempty"`
	// Gateways of the generated VirtualService (Istio). Default mesh. mesh, gateways of the
	// Canary's namespace, or those the controller allows (--allowed-route-parents).
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=317
	Gateways []string `json:"gateways,omitempty"`
	// RouteRef points at an existing HTTPRoute or VirtualService in the Canary's namespace. Sluice
	// then edits only the backend weights that point at the apex service and leaves every other
	// rule, match, filter, retry and timeout as written.
	// +optional
	RouteRef *RouteReference `json:"routeRef,omitempty"`

	// Match conditions of the generated route (Istio HTTPMatchRequest shape).
	// +optional
	// +kubebuilder:validation:MaxItems=16
	Match []HTTPMatchRequest `json:"match,omitempty"`
	// Retries of the generated route.
	// +optional
	Retries *HTTPRetry `json:"retries,omitempty"`
	// Timeout of the generated route, a duration such as 10s.
	// +optional
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	Timeout string `json:"timeout,omitempty"`
	// BackendTimeout of the generated HTTPRoute (timeouts.backendRequest), a duration such as 5s;
	// Gateway API only. It must not exceed Timeout.
	// +optional
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	BackendTimeout string `json:"backendTimeout,omitempty"`
	// Rewrite of the generated route: the request's URI and authority.
	// +optional
	Rewrite *HTTPRewrite `json:"rewrite,omitempty"`
	// Headers operations of the generated route.
	// +optional
	Headers *HeaderOperations `json:"headers,omitempty"`
	// CorsPolicy of the generated VirtualService, in Istio's CorsPolicy shape.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	CorsPolicy *apiextensionsv1.JSON `json:"corsPolicy,omitempty"`
	// TrafficPolicy of the generated DestinationRules, in Istio's TrafficPolicy shape.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	TrafficPolicy *apiextensionsv1.JSON `json:"trafficPolicy,omitempty"`
}

// RouteReference names an existing route object in the Canary's namespace.
type RouteReference struct {
	// APIVersion of the route, e.g. gateway.networking.k8s.io/v1 or networking.istio.io/v1.
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`
	// Kind of the route.
	// +kubebuilder:validation:Enum=HTTPRoute;VirtualService
	Kind string `json:"kind"`
	// Name of the route.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// HTTPMatchRequest is a request match in Istio's shape; the Gateway API provider converts it.
type HTTPMatchRequest struct {
	// Headers to match by name.
	// +optional
	// +kubebuilder:validation:MaxProperties=16
	Headers map[string]StringMatch `json:"headers,omitempty"`
	// URI to match.
	// +optional
	URI *StringMatch `json:"uri,omitempty"`
	// Method to match.
	// +optional
	Method *StringMatch `json:"method,omitempty"`
	// QueryParams to match by name.
	// +optional
	// +kubebuilder:validation:MaxProperties=16
	QueryParams map[string]StringMatch `json:"queryParams,omitempty"`
}

// StringMatch matches a string exactly, by prefix or by RE2 regular expression; set exactly one.
// +kubebuilder:validation:XValidation:rule="(has(self.exact) ? 1 : 0) + (has(self.prefix) ? 1 : 0) + (has(self.regex) ? 1 : 0) == 1",message="match: set exactly one of exact, prefix or regex"
type StringMatch struct {
	// +optional
	Exact *string `json:"exact,omitempty"`
	// +optional
	Prefix *string `json:"prefix,omitempty"`
	// +optional
	Regex *string `json:"regex,omitempty"`
}

// HTTPRetry is the retry policy of a generated route.
type HTTPRetry struct {
	// Attempts is the number of retries.
	// +kubebuilder:validation:Minimum=0
	Attempts int32 `json:"attempts"`
	// PerTryTimeout is a duration such as 2s.
	// +optional
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	PerTryTimeout string `json:"perTryTimeout,omitempty"`
	// RetryOn lists Envoy retry conditions, e.g. 5xx,reset,connect-failure.
	// +optional
	RetryOn string `json:"retryOn,omitempty"`
}

// HeaderOperations edit request and response headers.
type HeaderOperations struct {
	// +optional
	Request *HeaderOperation `json:"request,omitempty"`
	// +optional
	Response *HeaderOperation `json:"response,omitempty"`
}

// HeaderOperation sets, adds and removes headers.
type HeaderOperation struct {
	// +optional
	Set map[string]string `json:"set,omitempty"`
	// +optional
	Add map[string]string `json:"add,omitempty"`
	// +optional
	Remove []string `json:"remove,omitempty"`
}

// ProgressionWindow is a time window in which a rollout may advance: it opens at every time the
// cron Schedule fires and stays open for Duration. A window that can never open (a schedule that
// never fires, such as February 30th) fails closed: runs hold and the Canary is Stalled, naming
// the window.
type ProgressionWindow struct {
	// Schedule in standard five-field cron syntax, e.g. "0 9 * * 1-5", or a descriptor such as
	// @daily or @every 1h.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="self.matches('^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|@every [0-9hms.]+|[^ ]+( +[^ ]+){4})$')",message="windows[].schedule must have five cron fields (minute hour day-of-month month day-of-week) or be a descriptor such as @daily"
	Schedule string `json:"schedule"`
	// Duration the window stays open, e.g. 8h; longer than zero.
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+(\\\\.[0-9]+)?(ms|s|m|h))+$') || duration(self) > duration('0s')",message="windows[].duration must be longer than zero: a window of no length never opens"
	Duration string `json:"duration"`
	// TimeZone of the schedule, an IANA name such as Europe/Berlin. Default UTC.
	// +optional
	TimeZone string `json:"timeZone,omitempty"`
}
