package convert

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The flagger.app/v1beta1 schema as far as convert reads it, written from Flagger's published
// CRD. Every scalar is a pointer and every field omitempty, so a field the input sets (even to
// false or 0) survives a round trip and a field the converter handled can be cleared: whatever is
// left set after conversion is reported as dropped (see residue).

// flaggerGroup is Flagger's API group; only version v1beta1 is converted.
const (
	flaggerGroup   = "flagger.app"
	flaggerVersion = "v1beta1"
)

type fCanary struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        metav1.ObjectMeta `json:"metadata"`
	Spec            fCanarySpec       `json:"spec"`
	Status          map[string]any    `json:"status,omitempty"`
}

type fCanarySpec struct {
	Provider                *string               `json:"provider,omitempty"`
	MetricsServer           *string               `json:"metricsServer,omitempty"`
	ProgressDeadlineSeconds *float64              `json:"progressDeadlineSeconds,omitempty"`
	TargetRef               *fRef                 `json:"targetRef,omitempty"`
	AutoscalerRef           *fAutoscalerRef       `json:"autoscalerRef,omitempty"`
	IngressRef              *fRef                 `json:"ingressRef,omitempty"`
	RouteRef                *fRef                 `json:"routeRef,omitempty"`
	UpstreamRef             *fRef                 `json:"upstreamRef,omitempty"`
	Service                 *fService             `json:"service,omitempty"`
	SkipAnalysis            *bool                 `json:"skipAnalysis,omitempty"`
	RevertOnDeletion        *bool                 `json:"revertOnDeletion,omitempty"`
	Suspend                 *bool                 `json:"suspend,omitempty"`
	Analysis                *fAnalysis            `json:"analysis,omitempty"`
	CanaryAnalysis          *apiextensionsv1.JSON `json:"canaryAnalysis,omitempty"`
}

type fRef struct {
	APIVersion *string `json:"apiVersion,omitempty"`
	Kind       *string `json:"kind,omitempty"`
	Name       *string `json:"name,omitempty"`
	Namespace  *string `json:"namespace,omitempty"`
}

type fAutoscalerRef struct {
	APIVersion            *string           `json:"apiVersion,omitempty"`
	Kind                  *string           `json:"kind,omitempty"`
	Name                  *string           `json:"name,omitempty"`
	PrimaryScalerQueries  map[string]string `json:"primaryScalerQueries,omitempty"`
	PrimaryScalerReplicas *fScalerReplicas  `json:"primaryScalerReplicas,omitempty"`
}

type fScalerReplicas struct {
	MinReplicas *float64 `json:"minReplicas,omitempty"`
	MaxReplicas *float64 `json:"maxReplicas,omitempty"`
}

type fService struct {
	Name                *string                `json:"name,omitempty"`
	Port                *float64               `json:"port,omitempty"`
	PortName            *string                `json:"portName,omitempty"`
	AppProtocol         *string                `json:"appProtocol,omitempty"`
	TrafficDistribution *string                `json:"trafficDistribution,omitempty"`
	TargetPort          *intstr.IntOrString    `json:"targetPort,omitempty"`
	PortDiscovery       *bool                  `json:"portDiscovery,omitempty"`
	Headless            *bool                  `json:"headless,omitempty"`
	Timeout             *string                `json:"timeout,omitempty"`
	BackendTimeout      *string                `json:"backendTimeout,omitempty"`
	MeshName            *string                `json:"meshName,omitempty"`
	Backends            []string               `json:"backends,omitempty"`
	Hosts               []string               `json:"hosts,omitempty"`
	Delegation          *bool                  `json:"delegation,omitempty"`
	Match               []fMatch               `json:"match,omitempty"`
	Retries             *fRetries              `json:"retries,omitempty"`
	Rewrite             *fRewrite              `json:"rewrite,omitempty"`
	Mirror              []apiextensionsv1.JSON `json:"mirror,omitempty"`
	Headers             *fHeaders              `json:"headers,omitempty"`
	Gateways            []string               `json:"gateways,omitempty"`
	GatewayRefs         []apiextensionsv1.JSON `json:"gatewayRefs,omitempty"`
	CorsPolicy          *apiextensionsv1.JSON  `json:"corsPolicy,omitempty"`
	TrafficPolicy       *apiextensionsv1.JSON  `json:"trafficPolicy,omitempty"`
	Apex                *fMetadata             `json:"apex,omitempty"`
	Primary             *fMetadata             `json:"primary,omitempty"`
	Canary              *fMetadata             `json:"canary,omitempty"`
	UnmanagedMetadata   *apiextensionsv1.JSON  `json:"unmanagedMetadata,omitempty"`
}

type fMatch struct {
	Headers         map[string]*fStringMatch `json:"headers,omitempty"`
	QueryParams     map[string]*fStringMatch `json:"queryParams,omitempty"`
	URI             *fStringMatch            `json:"uri,omitempty"`
	Method          *fStringMatch            `json:"method,omitempty"`
	Authority       *fStringMatch            `json:"authority,omitempty"`
	Scheme          *fStringMatch            `json:"scheme,omitempty"`
	WithoutHeaders  map[string]*fStringMatch `json:"withoutHeaders,omitempty"`
	IgnoreURICase   *bool                    `json:"ignoreUriCase,omitempty"`
	Name            *string                  `json:"name,omitempty"`
	Port            *float64                 `json:"port,omitempty"`
	Gateways        []string                 `json:"gateways,omitempty"`
	SourceLabels    map[string]string        `json:"sourceLabels,omitempty"`
	SourceNamespace *string                  `json:"sourceNamespace,omitempty"`
}

type fStringMatch struct {
	Exact  *string `json:"exact,omitempty"`
	Prefix *string `json:"prefix,omitempty"`
	Suffix *string `json:"suffix,omitempty"`
	Regex  *string `json:"regex,omitempty"`
}

type fRetries struct {
	Attempts      *float64 `json:"attempts,omitempty"`
	PerTryTimeout *string  `json:"perTryTimeout,omitempty"`
	RetryOn       *string  `json:"retryOn,omitempty"`
}

type fRewrite struct {
	URI       *string `json:"uri,omitempty"`
	Authority *string `json:"authority,omitempty"`
	Type      *string `json:"type,omitempty"`
}

type fHeaders struct {
	Request  *fHeaderOp `json:"request,omitempty"`
	Response *fHeaderOp `json:"response,omitempty"`
}

type fHeaderOp struct {
	Add    map[string]string `json:"add,omitempty"`
	Set    map[string]string `json:"set,omitempty"`
	Remove []string          `json:"remove,omitempty"`
}

type fMetadata struct {
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type fAnalysis struct {
	Interval              *string           `json:"interval,omitempty"`
	Iterations            *float64          `json:"iterations,omitempty"`
	Threshold             *float64          `json:"threshold,omitempty"`
	MaxWeight             *float64          `json:"maxWeight,omitempty"`
	StepWeight            *float64          `json:"stepWeight,omitempty"`
	StepWeights           []float64         `json:"stepWeights,omitempty"`
	StepWeightPromotion   *float64          `json:"stepWeightPromotion,omitempty"`
	Mirror                *bool             `json:"mirror,omitempty"`
	MirrorWeight          *float64          `json:"mirrorWeight,omitempty"`
	PrimaryReadyThreshold *float64          `json:"primaryReadyThreshold,omitempty"`
	CanaryReadyThreshold  *float64          `json:"canaryReadyThreshold,omitempty"`
	Match                 []fMatch          `json:"match,omitempty"`
	Metrics               []fMetric         `json:"metrics,omitempty"`
	Alerts                []fAlert          `json:"alerts,omitempty"`
	Webhooks              []fWebhook        `json:"webhooks,omitempty"`
	SessionAffinity       *fSessionAffinity `json:"sessionAffinity,omitempty"`
}

type fMetric struct {
	Name              *string           `json:"name,omitempty"`
	Interval          *string           `json:"interval,omitempty"`
	Threshold         *float64          `json:"threshold,omitempty"`
	ThresholdRange    *fRange           `json:"thresholdRange,omitempty"`
	Query             *string           `json:"query,omitempty"`
	TemplateRef       *fRef             `json:"templateRef,omitempty"`
	TemplateVariables map[string]string `json:"templateVariables,omitempty"`
}

type fRange struct {
	Min *float64 `json:"min,omitempty"`
	Max *float64 `json:"max,omitempty"`
}

type fAlert struct {
	Name        *string `json:"name,omitempty"`
	Severity    *string `json:"severity,omitempty"`
	ProviderRef *fRef   `json:"providerRef,omitempty"`
}

type fWebhook struct {
	Name       *string           `json:"name,omitempty"`
	Type       *string           `json:"type,omitempty"`
	URL        *string           `json:"url,omitempty"`
	MuteAlert  *bool             `json:"muteAlert,omitempty"`
	Timeout    *string           `json:"timeout,omitempty"`
	Retries    *float64          `json:"retries,omitempty"`
	DisableTLS *bool             `json:"disableTLS,omitempty"`
	Metadata   map[string]string `json:"metadata,omitempty"`
}

type fSessionAffinity struct {
	CookieName        *string  `json:"cookieName,omitempty"`
	PrimaryCookieName *string  `json:"primaryCookieName,omitempty"`
	Domain            *string  `json:"domain,omitempty"`
	HTTPOnly          *bool    `json:"httpOnly,omitempty"`
	MaxAge            *float64 `json:"maxAge,omitempty"`
	Partitioned       *bool    `json:"partitioned,omitempty"`
	Path              *string  `json:"path,omitempty"`
	SameSite          *string  `json:"sameSite,omitempty"`
	Secure            *bool    `json:"secure,omitempty"`
}

type fMetricTemplate struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        metav1.ObjectMeta   `json:"metadata"`
	Spec            fMetricTemplateSpec `json:"spec"`
	Status          map[string]any      `json:"status,omitempty"`
}

type fMetricTemplateSpec struct {
	Provider *fMetricProvider `json:"provider,omitempty"`
	Query    *string          `json:"query,omitempty"`
}

type fMetricProvider struct {
	Type               *string             `json:"type,omitempty"`
	Address            *string             `json:"address,omitempty"`
	Headers            map[string][]string `json:"headers,omitempty"`
	SecretRef          *fRef               `json:"secretRef,omitempty"`
	Region             *string             `json:"region,omitempty"`
	InsecureSkipVerify *bool               `json:"insecureSkipVerify,omitempty"`
}

type fAlertProvider struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        metav1.ObjectMeta  `json:"metadata"`
	Spec            fAlertProviderSpec `json:"spec"`
	Status          map[string]any     `json:"status,omitempty"`
}

type fAlertProviderSpec struct {
	Type      *string `json:"type,omitempty"`
	Channel   *string `json:"channel,omitempty"`
	Username  *string `json:"username,omitempty"`
	Address   *string `json:"address,omitempty"`
	Proxy     *string `json:"proxy,omitempty"`
	SecretRef *fRef   `json:"secretRef,omitempty"`
}
