package convert

import (
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// gatewayAPIProviders are Flagger providers whose controllers also implement the Gateway API, so
// a Canary of theirs can route through an HTTPRoute instead.
var gatewayAPIProviders = map[string]bool{
	"contour": true, "gloo": true, "nginx": true, "traefik": true, "kuma": true, "apisix": true,
}

// convertCanary converts a Flagger Canary. A Canary whose target Sluice cannot deliver (a Knative
// Service) is not converted.
func convertCanary(in *fCanary, r *ObjectReport) []client.Object {
	out := &sluicev1.Canary{}
	out.APIVersion, out.Kind = sluicev1.GroupVersion.String(), "Canary"
	out.ObjectMeta = convertMeta(in.Metadata, r)
	convertStatus(in.Status, r)
	spec := &in.Spec

	if !convertTarget(spec, &out.Spec, r) {
		return nil // the reason is reported; every other field goes with the Canary
	}
	convertProvider(spec, &out.Spec, r)
	out.Spec.MetricsServer = takeString(&spec.MetricsServer)
	if v, ok := takeInt(r, "spec.progressDeadlineSeconds", &spec.ProgressDeadlineSeconds); ok {
		out.Spec.ProgressDeadlineSeconds = ptr.To(v)
	}
	out.Spec.SkipAnalysis = takeBool(&spec.SkipAnalysis)
	out.Spec.Suspend = takeBool(&spec.Suspend)
	out.Spec.RevertOnDeletion = takeBool(&spec.RevertOnDeletion)
	convertAutoscaler(spec, &out.Spec, r)
	for _, ref := range []struct {
		field, provider string
		p               **fRef
	}{{"spec.ingressRef", "nginx", &spec.IngressRef}, {"spec.routeRef", "apisix", &spec.RouteRef}, {"spec.upstreamRef", "gloo", &spec.UpstreamRef}} {
		if *ref.p != nil {
			r.drop(ref.field, "a reference for Flagger's %s provider; Sluice routes through Gateway API or Istio (spec.service.routeRef names an existing HTTPRoute or VirtualService)", ref.provider)
			*ref.p = nil
		}
	}
	if spec.CanaryAnalysis != nil {
		r.drop("spec.canaryAnalysis", "Flagger v1alpha3's name of spec.analysis, not read in v1beta1 either")
		spec.CanaryAnalysis = nil
	}
	if spec.Service != nil {
		convertService(spec.Service, out, r)
	} else {
		r.drop("spec.service", "missing: Sluice needs spec.service.port")
	}
	if spec.Analysis != nil {
		convertAnalysis(spec.Analysis, out, r)
	}
	checkBuiltinsWithoutMesh(out, r)
	residue(r, "spec", spec)
	return []client.Object{out}
}

// convertTarget converts spec.targetRef and reports whether the target can be delivered.
func convertTarget(in *fCanarySpec, out *sluicev1.CanarySpec, r *ObjectReport) bool {
	ref := in.TargetRef
	if ref == nil {
		r.drop("spec.targetRef", "missing: the Canary is not converted")
		return false
	}
	kind := takeString(&ref.Kind)
	switch kind {
	case "Deployment", "DaemonSet":
	default:
		r.drop("spec.targetRef.kind", "%q: Sluice delivers Deployments and DaemonSets; the Canary is not converted", kind)
		ref.Kind = ptr.To(kind)
		return false
	}
	out.TargetRef = sluicev1.TargetReference{APIVersion: takeString(&ref.APIVersion), Kind: kind, Name: takeString(&ref.Name)}
	if ref.Namespace != nil {
		r.drop("spec.targetRef.namespace", "the target is always in the Canary's namespace")
		ref.Namespace = nil
	}
	in.TargetRef = nil
	return true
}

// convertProvider maps Flagger's provider to Sluice's provider and, for Linkerd, mesh.
func convertProvider(in *fCanarySpec, out *sluicev1.CanarySpec, r *ObjectReport) {
	provider := takeString(&in.Provider)
	switch provider {
	case "":
		out.Provider = sluicev1.ProviderGatewayAPI
		r.change("spec.provider", "not set: Flagger uses its --mesh-provider flag, Sluice has no such default; written as gatewayapi (change it if Flagger ran with another provider)")
	case "istio":
		out.Provider = sluicev1.ProviderIstio
	case "gatewayapi", "gatewayapi:v1":
		out.Provider = sluicev1.ProviderGatewayAPI
	case "gatewayapi:v1beta1":
		out.Provider = sluicev1.ProviderGatewayAPI
		r.change("spec.provider", "gatewayapi:v1beta1 → gatewayapi: Sluice writes gateway.networking.k8s.io/v1 HTTPRoutes")
	case "linkerd":
		out.Provider, out.Mesh = sluicev1.ProviderGatewayAPI, sluicev1.MeshLinkerd
		r.change("spec.provider", "linkerd → gatewayapi with mesh: linkerd: an HTTPRoute whose parent is the apex Service (Linkerd 2.14+ routes it); built-in metrics read Linkerd's response_total")
	case "kubernetes":
		out.Provider = sluicev1.ProviderKubernetes
	default:
		out.Provider = sluicev1.ProviderGatewayAPI
		hint := "route through a Gateway API implementation instead and point spec.service.gatewayRefs at its Gateway"
		if gatewayAPIProviders[provider] {
			hint = provider + " implements the Gateway API: point spec.service.gatewayRefs at its Gateway"
		}
		r.drop("spec.provider", "Sluice has no %s provider; written as gatewayapi: %s", provider, hint)
	}
}

// convertAutoscaler converts spec.autoscalerRef; an autoscaling/v2beta* HPA becomes autoscaling/v2.
func convertAutoscaler(in *fCanarySpec, out *sluicev1.CanarySpec, r *ObjectReport) {
	ref := in.AutoscalerRef
	if ref == nil {
		return
	}
	a := &sluicev1.AutoscalerReference{Kind: takeString(&ref.Kind), Name: takeString(&ref.Name), APIVersion: takeString(&ref.APIVersion)}
	switch a.Kind {
	case sluicev1.AutoscalerHPA:
		if a.APIVersion != "autoscaling/v2" {
			r.change("spec.autoscalerRef.apiVersion", "%s → autoscaling/v2: Sluice reads and writes autoscaling/v2 HorizontalPodAutoscalers (the same object, served in every version)", a.APIVersion)
			a.APIVersion = "autoscaling/v2"
		}
	case sluicev1.AutoscalerScaledObject:
		if a.APIVersion != "keda.sh/v1alpha1" {
			r.change("spec.autoscalerRef.apiVersion", "%s → keda.sh/v1alpha1, the version of KEDA's ScaledObject Sluice reads", a.APIVersion)
			a.APIVersion = "keda.sh/v1alpha1"
		}
	default:
		r.drop("spec.autoscalerRef", "kind %q: Sluice supports HorizontalPodAutoscaler and ScaledObject", a.Kind)
		in.AutoscalerRef = nil
		return
	}
	if out.TargetRef.Kind != "Deployment" {
		r.drop("spec.autoscalerRef", "an autoscaler applies to Deployment targets only")
		in.AutoscalerRef = nil
		return
	}
	a.PrimaryScalerQueries, ref.PrimaryScalerQueries = ref.PrimaryScalerQueries, nil
	if rep := ref.PrimaryScalerReplicas; rep != nil {
		a.PrimaryScalerReplicas = &sluicev1.ScalerReplicas{}
		if v, ok := takeInt(r, "spec.autoscalerRef.primaryScalerReplicas.minReplicas", &rep.MinReplicas); ok {
			a.PrimaryScalerReplicas.MinReplicas = ptr.To(v)
		}
		if v, ok := takeInt(r, "spec.autoscalerRef.primaryScalerReplicas.maxReplicas", &rep.MaxReplicas); ok {
			a.PrimaryScalerReplicas.MaxReplicas = ptr.To(v)
		}
	}
	if len(a.PrimaryScalerQueries) > 0 && a.Kind != sluicev1.AutoscalerScaledObject {
		r.drop("spec.autoscalerRef.primaryScalerQueries", "applies to a ScaledObject only")
		a.PrimaryScalerQueries = nil
	}
	out.AutoscalerRef = a
	in.AutoscalerRef = nil
}

// checkBuiltinsWithoutMesh drops the built-in metrics of a kubernetes-provider Canary without a
// mesh: Flagger reads the application's own request metrics there, Sluice reads a proxy's.
func checkBuiltinsWithoutMesh(c *sluicev1.Canary, r *ObjectReport) {
	if c.Spec.Provider != sluicev1.ProviderKubernetes || c.Spec.Mesh != "" {
		return
	}
	kept := c.Spec.Analysis.Metrics[:0]
	for i, m := range c.Spec.Analysis.Metrics {
		if m.TemplateRef == nil && m.Query == "" {
			r.drop(fieldf("spec.analysis.metrics[%d]", i), "built-in %s: with provider kubernetes Flagger reads the application's own request metrics, Sluice's built-ins read a mesh proxy's: set spec.mesh (istio, linkerd, envoy) and add it back, or use a MetricTemplate",
				m.Name)
			continue
		}
		kept = append(kept, m)
	}
	c.Spec.Analysis.Metrics = kept
	if len(kept) == 0 {
		c.Spec.Analysis.Metrics = nil
	}
}
