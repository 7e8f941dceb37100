package convert

import (
	"encoding/json"
	"maps"
	"regexp"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// convertService converts spec.service. Fields that only one provider renders are dropped, with
// the reason, when the Canary uses another.
func convertService(in *fService, c *sluicev1.Canary, r *ObjectReport) {
	out := &c.Spec.Service
	provider := c.Spec.Provider
	out.Name = takeString(&in.Name)
	if v, ok := takeInt(r, "spec.service.port", &in.Port); ok {
		out.Port = v
	} else {
		r.drop("spec.service.port", "missing: Sluice needs the port of the Services")
	}
	out.PortName = takeString(&in.PortName)
	if v := takeString(&in.AppProtocol); v != "" {
		out.AppProtocol = ptr.To(v)
	}
	out.TargetPort, in.TargetPort = in.TargetPort, nil
	out.PortDiscovery = takeBool(&in.PortDiscovery)
	out.Headless = takeBool(&in.Headless)
	out.Apex, in.Apex = metadataOf(in.Apex), nil
	out.Primary, in.Primary = metadataOf(in.Primary), nil
	out.Canary, in.Canary = metadataOf(in.Canary), nil

	l7 := provider != sluicev1.ProviderKubernetes
	onlyL7 := func(field string) bool {
		if !l7 {
			r.drop(field, "provider kubernetes has no L7 routing (Flagger ignores it there too)")
		}
		return l7
	}
	if v := takeString(&in.Timeout); v != "" && onlyL7("spec.service.timeout") {
		out.Timeout = v
	}
	if v := takeString(&in.BackendTimeout); v != "" && onlyL7("spec.service.backendTimeout") {
		if provider == sluicev1.ProviderGatewayAPI {
			out.BackendTimeout = v
		} else {
			r.drop("spec.service.backendTimeout", "a Gateway API field (Flagger ignores it with provider %s too)", provider)
		}
	}
	if len(in.Hosts) > 0 && onlyL7("spec.service.hosts") {
		out.Hosts = in.Hosts
	}
	in.Hosts = nil
	if len(in.Gateways) > 0 && onlyL7("spec.service.gateways") {
		if provider == sluicev1.ProviderIstio {
			out.Gateways = in.Gateways
		} else {
			r.drop("spec.service.gateways", "Istio gateways; with provider gatewayapi the parents are spec.service.gatewayRefs")
		}
	}
	in.Gateways = nil
	if len(in.GatewayRefs) > 0 && onlyL7("spec.service.gatewayRefs") {
		convertGatewayRefs(in.GatewayRefs, provider, out, r)
	}
	in.GatewayRefs = nil
	if len(in.Match) > 0 && onlyL7("spec.service.match") {
		out.Match = convertMatches(in.Match, "spec.service.match", r)
	}
	in.Match = nil
	if in.Headers != nil && onlyL7("spec.service.headers") {
		out.Headers = &sluicev1.HeaderOperations{Request: headerOp(in.Headers.Request), Response: headerOp(in.Headers.Response)}
	}
	in.Headers = nil
	if in.Rewrite != nil && onlyL7("spec.service.rewrite") {
		out.Rewrite = convertRewrite(in.Rewrite, provider, r)
	}
	in.Rewrite = nil
	istioOnly := func(field string, set bool) bool {
		if !set || !onlyL7(field) {
			return false
		}
		if provider != sluicev1.ProviderIstio {
			r.drop(field, "rendered by provider istio only (Flagger ignores it with provider %s too)", provider)
			return false
		}
		return true
	}
	if istioOnly("spec.service.retries", in.Retries != nil) {
		out.Retries = &sluicev1.HTTPRetry{PerTryTimeout: takeString(&in.Retries.PerTryTimeout), RetryOn: takeString(&in.Retries.RetryOn)}
		out.Retries.Attempts, _ = takeInt(r, "spec.service.retries.attempts", &in.Retries.Attempts)
	}
	in.Retries = nil
	if istioOnly("spec.service.corsPolicy", in.CorsPolicy != nil) {
		out.CorsPolicy = in.CorsPolicy
	}
	in.CorsPolicy = nil
	if istioOnly("spec.service.trafficPolicy", in.TrafficPolicy != nil) {
		out.TrafficPolicy = in.TrafficPolicy
	}
	in.TrafficPolicy = nil

	dropped := []struct {
		field string
		set   bool
		why   string
		clear func()
	}{
		{"spec.service.delegation", in.Delegation != nil && *in.Delegation, "Sluice generates no delegate VirtualService: point spec.service.routeRef at an existing VirtualService (Sluice edits only its weights)", func() { in.Delegation = nil }},
		{"spec.service.mirror", len(in.Mirror) > 0, "mirroring to other backends is not supported; spec.analysis.mirror mirrors to the canary during blue/green runs", func() { in.Mirror = nil }},
		{"spec.service.meshName", in.MeshName != nil, "App Mesh only; Sluice has no App Mesh provider", func() { in.MeshName = nil }},
		{"spec.service.backends", len(in.Backends) > 0, "App Mesh only; Sluice has no App Mesh provider", func() { in.Backends = nil }},
		{"spec.service.unmanagedMetadata", in.UnmanagedMetadata != nil, "Sluice manages only the selector, ports and its own labels of the Services; other metadata is left alone already", func() { in.UnmanagedMetadata = nil }},
		{"spec.service.trafficDistribution", in.TrafficDistribution != nil, "not supported yet: set it on the Services yourself (Sluice leaves the field alone)", func() { in.TrafficDistribution = nil }},
	}
	for _, d := range dropped {
		if d.set {
			r.drop(d.field, "%s", d.why)
		}
		d.clear()
	}
	residue(r, "spec.service", in)
}

func metadataOf(in *fMetadata) *sluicev1.ServiceMetadata {
	if in == nil || (len(in.Labels) == 0 && len(in.Annotations) == 0) {
		return nil
	}
	return &sluicev1.ServiceMetadata{Labels: in.Labels, Annotations: in.Annotations}
}

func headerOp(in *fHeaderOp) *sluicev1.HeaderOperation {
	if in == nil {
		return nil
	}
	return &sluicev1.HeaderOperation{Set: in.Set, Add: in.Add, Remove: in.Remove}
}

// convertGatewayRefs converts Gateway API parentRefs (Flagger's defaults: group
// gateway.networking.k8s.io, kind Gateway, as in the HTTPRoute schema).
func convertGatewayRefs(in []apiextensionsv1.JSON, provider sluicev1.Provider, out *sluicev1.CanaryService, r *ObjectReport) {
	if provider != sluicev1.ProviderGatewayAPI {
		r.drop("spec.service.gatewayRefs", "Gateway API parents; with provider %s they do not apply (Flagger ignores them too)", provider)
		return
	}
	for i, raw := range in {
		var ref gwv1.ParentReference
		if err := json.Unmarshal(raw.Raw, &ref); err != nil {
			r.drop(fieldf("spec.service.gatewayRefs[%d]", i), "not a Gateway API parentRef: %v", err)
			continue
		}
		out.GatewayRefs = append(out.GatewayRefs, ref)
	}
}

// convertRewrite converts spec.service.rewrite; Flagger's type applies to Gateway API only.
func convertRewrite(in *fRewrite, provider sluicev1.Provider, r *ObjectReport) *sluicev1.HTTPRewrite {
	out := &sluicev1.HTTPRewrite{URI: takeString(&in.URI), Authority: takeString(&in.Authority)}
	switch typ := takeString(&in.Type); {
	case typ == "":
	case provider != sluicev1.ProviderGatewayAPI:
		r.drop("spec.service.rewrite.type", "a Gateway API field; Istio replaces the matched prefix (Flagger ignores it there too)")
	case typ == sluicev1.RewriteReplaceFullPath || typ == sluicev1.RewriteReplacePrefixMatch:
		out.Type = typ
	default:
		r.drop("spec.service.rewrite.type", "%q: want ReplaceFullPath or ReplacePrefixMatch", typ)
	}
	if out.URI == "" && out.Authority == "" {
		r.drop("spec.service.rewrite", "sets neither uri nor authority")
		return nil
	}
	return out
}

// convertMatches converts Istio-shaped match conditions. Sluice matches on headers, query
// parameters, URI and method; every other condition is dropped.
func convertMatches(in []fMatch, field string, r *ObjectReport) []sluicev1.HTTPMatchRequest {
	var out []sluicev1.HTTPMatchRequest
	for i := range in {
		m := &in[i]
		path := fieldf("%s[%d]", field, i)
		var o sluicev1.HTTPMatchRequest
		o.Headers = convertStringMatches(m.Headers, path+".headers", r)
		o.QueryParams = convertStringMatches(m.QueryParams, path+".queryParams", r)
		m.Headers, m.QueryParams = nil, nil
		o.URI = convertStringMatch(m.URI, path+".uri", r)
		o.Method = convertStringMatch(m.Method, path+".method", r)
		m.URI, m.Method = nil, nil
		if m.IgnoreURICase != nil && !*m.IgnoreURICase {
			m.IgnoreURICase = nil // false is the default
		}
		if m.Name != nil {
			r.change(path+".name", "match names are not kept (they only label Istio's access logs)")
			m.Name = nil
		}
		residue(r, path, m) // authority, scheme, withoutHeaders, port, gateways, sourceLabels, ...
		if o.Headers == nil && o.QueryParams == nil && o.URI == nil && o.Method == nil {
			r.drop(path, "no condition Sluice can match on is left: the match is removed")
			continue
		}
		out = append(out, o)
	}
	return out
}

func convertStringMatches(in map[string]*fStringMatch, field string, r *ObjectReport) map[string]sluicev1.StringMatch {
	if len(in) == 0 {
		return nil
	}
	out := map[string]sluicev1.StringMatch{}
	for _, name := range slices.Sorted(maps.Keys(in)) {
		if sm := convertStringMatch(in[name], field+"."+name, r); sm != nil {
			out[name] = *sm
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// convertStringMatch keeps exact, prefix and regex; a suffix becomes the regular expression
// ".*<suffix>" (Envoy matches regular expressions against the whole value).
func convertStringMatch(in *fStringMatch, field string, r *ObjectReport) *sluicev1.StringMatch {
	if in == nil {
		return nil
	}
	out := &sluicev1.StringMatch{}
	set := 0
	if in.Exact != nil {
		out.Exact, set = in.Exact, set+1
	}
	if in.Prefix != nil {
		out.Prefix, set = in.Prefix, set+1
	}
	if in.Regex != nil {
		out.Regex, set = in.Regex, set+1
	}
	if in.Suffix != nil {
		out.Regex, set = ptr.To(".*"+regexp.QuoteMeta(*in.Suffix)), set+1
		r.change(field+".suffix", "%q → regex %q", *in.Suffix, *out.Regex)
	}
	if set != 1 {
		r.drop(field, "sets %d of exact, prefix, suffix, regex; exactly one is allowed", set)
		return nil
	}
	return out
}
