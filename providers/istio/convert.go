package istio

import (
	"bytes"
	"fmt"
	"time"

	"github.com/golang/protobuf/jsonpb" //nolint:staticcheck // Istio's JSON shape is jsonpb's
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/durationpb"
	networkingv1 "istio.io/api/networking/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/providers"
)

// ErrInvalidSpec means a field of spec.service cannot be converted into its Istio type.
var ErrInvalidSpec error = providers.Permanent(sluicev1.ReasonInvalidSpec, "invalid canary service spec")

// convertMatch converts spec.service.match into Istio match requests (nil for none).
// errors: ErrInvalidSpec for a StringMatch without exactly one of exact, prefix, regex.
func convertMatch(in []sluicev1.HTTPMatchRequest) ([]*networkingv1.HTTPMatchRequest, error) {
	return convertMatchField("spec.service.match", in)
}

// convertMatchField converts the match requests of the spec field named field (nil for none).
// errors: ErrInvalidSpec naming field[i].
func convertMatchField(field string, in []sluicev1.HTTPMatchRequest) ([]*networkingv1.HTTPMatchRequest, error) {
	var out []*networkingv1.HTTPMatchRequest
	for i, m := range in {
		field := fmt.Sprintf("%s[%d]", field, i)
		r := &networkingv1.HTTPMatchRequest{}
		var err error
		if r.Headers, err = convertStringMatches(field+".headers", m.Headers); err != nil {
			return nil, err
		}
		if r.QueryParams, err = convertStringMatches(field+".queryParams", m.QueryParams); err != nil {
			return nil, err
		}
		if m.URI != nil {
			if r.Uri, err = convertStringMatch(field+".uri", *m.URI); err != nil {
				return nil, err
			}
		}
		if m.Method != nil {
			if r.Method, err = convertStringMatch(field+".method", *m.Method); err != nil {
				return nil, err
			}
		}
		out = append(out, r)
	}
	return out, nil
}

func convertStringMatches(field string, in map[string]sluicev1.StringMatch) (map[string]*networkingv1.StringMatch, error) {
	if len(in) == 0 {
		return nil, nil
	}
	out := make(map[string]*networkingv1.StringMatch, len(in))
	for k, m := range in {
		sm, err := convertStringMatch(field+"."+k, m)
		if err != nil {
			return nil, err
		}
		out[k] = sm
	}
	return out, nil
}

func convertStringMatch(field string, m sluicev1.StringMatch) (*networkingv1.StringMatch, error) {
	var set []*networkingv1.StringMatch
	if m.Exact != nil {
		set = append(set, &networkingv1.StringMatch{MatchType: &networkingv1.StringMatch_Exact{Exact: *m.Exact}})
	}
	if m.Prefix != nil {
		set = append(set, &networkingv1.StringMatch{MatchType: &networkingv1.StringMatch_Prefix{Prefix: *m.Prefix}})
	}
	if m.Regex != nil {
		set = append(set, &networkingv1.StringMatch{MatchType: &networkingv1.StringMatch_Regex{Regex: *m.Regex}})
	}
	if len(set) != 1 {
		return nil, fmt.Errorf("%w: %s: set exactly one of exact, prefix or regex", ErrInvalidSpec, field)
	}
	return set[0], nil
}

// convertRetries converts spec.service.retries (nil for none); perTryTimeout is a Go duration.
// errors: ErrInvalidSpec for an unparsable perTryTimeout.
func convertRetries(in *sluicev1.HTTPRetry) (*networkingv1.HTTPRetry, error) {
	if in == nil {
		return nil, nil
	}
	out := &networkingv1.HTTPRetry{Attempts: in.Attempts, RetryOn: in.RetryOn}
	var err error
	if out.PerTryTimeout, err = convertDuration("spec.service.retries.perTryTimeout", in.PerTryTimeout); err != nil {
		return nil, err
	}
	return out, nil
}

// convertDuration parses s (e.g. "10s", "1m30s"; empty means unset, nil).
// errors: ErrInvalidSpec naming field.
func convertDuration(field, s string) (*durationpb.Duration, error) {
	if s == "" {
		return nil, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return nil, fmt.Errorf("%w: %s: %q is not a non-negative duration such as 10s", ErrInvalidSpec, field, s)
	}
	return durationpb.New(d), nil
}

// convertHeaders converts spec.service.headers (nil for none).
func convertHeaders(in *sluicev1.HeaderOperations) *networkingv1.Headers {
	if in == nil || (in.Request == nil && in.Response == nil) {
		return nil
	}
	return &networkingv1.Headers{Request: convertHeaderOp(in.Request), Response: convertHeaderOp(in.Response)}
}

func convertHeaderOp(in *sluicev1.HeaderOperation) *networkingv1.Headers_HeaderOperations {
	if in == nil {
		return nil
	}
	return &networkingv1.Headers_HeaderOperations{Set: in.Set, Add: in.Add, Remove: in.Remove}
}

// convertCorsPolicy parses spec.service.corsPolicy, Istio's CorsPolicy in its JSON shape (nil for
// none). errors: ErrInvalidSpec with the protojson error (unknown field, wrong type).
func convertCorsPolicy(in *apiextensionsv1.JSON) (*networkingv1.CorsPolicy, error) {
	out := &networkingv1.CorsPolicy{}
	ok, err := unmarshalJSONField("spec.service.corsPolicy", in, out)
	if !ok {
		return nil, err
	}
	return out, nil
}

// convertTrafficPolicy parses spec.service.trafficPolicy, Istio's TrafficPolicy in its JSON shape
// (nil for none). errors: ErrInvalidSpec with the protojson error (unknown field, wrong type).
func convertTrafficPolicy(in *apiextensionsv1.JSON) (*networkingv1.TrafficPolicy, error) {
	out := &networkingv1.TrafficPolicy{}
	ok, err := unmarshalJSONField("spec.service.trafficPolicy", in, out)
	if !ok {
		return nil, err
	}
	return out, nil
}

// istioJSON decodes Istio's JSON shape as Istio's own types do (durations such as "24h" or "1.5s",
// enums by name), but rejects unknown fields so a typo is an error rather than a silently missing
// policy. protojson would refuse durations that are not in seconds ("86400s"), which the Istio
// CRDs and Istio itself accept.
var istioJSON = &jsonpb.Unmarshaler{AllowUnknownFields: false}

// unmarshalJSONField fills m from a schemaless JSON field; false when the field is unset or
// invalid (then with the error).
func unmarshalJSONField(field string, in *apiextensionsv1.JSON, m proto.Message) (bool, error) {
	if in == nil || len(in.Raw) == 0 || string(in.Raw) == "null" {
		return false, nil
	}
	if err := istioJSON.Unmarshal(bytes.NewReader(in.Raw), protoadapt.MessageV1Of(m)); err != nil {
		return false, fmt.Errorf("%w: %s is not a valid Istio %s: %w", ErrInvalidSpec, field,
			m.ProtoReflect().Descriptor().Name(), err)
	}
	return true, nil
}
