package gatewayapi

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwapplyv1 "sigs.k8s.io/gateway-api/applyconfiguration/apis/v1"

	"sluice.dev/sluice/providers"
)

// apply server-side applies route with field manager providers.FieldManager, taking ownership of
// the fields it sets from other managers (HTTPRoute spec.rules is an atomic list: whoever applies
// it owns all of it). An apply configuration carrying a resourceVersion fails with a Conflict when
// the route changed since it was read, so a concurrent edit is never overwritten unseen.
// errors: API errors, wrapped with the route's name.
func (r *Router) apply(ctx context.Context, route *gwapplyv1.HTTPRouteApplyConfiguration, why string) error {
	ref := klog.KRef(*route.GetNamespace(), *route.GetName())
	log.FromContext(ctx).Info(why, "httpRoute", ref)
	if err := r.c.Apply(ctx, route, client.FieldOwner(providers.FieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("applying HTTPRoute %s: %w", ref, err)
	}
	return nil
}

// specApply converts a typed HTTPRoute spec into its apply configuration.
func specApply(spec gwv1.HTTPRouteSpec) (*gwapplyv1.HTTPRouteSpecApplyConfiguration, error) {
	out := &gwapplyv1.HTTPRouteSpecApplyConfiguration{}
	return out, convert(spec, out)
}

// rulesApply converts typed HTTPRoute rules into their apply configurations.
func rulesApply(rules []gwv1.HTTPRouteRule) ([]*gwapplyv1.HTTPRouteRuleApplyConfiguration, error) {
	var out []*gwapplyv1.HTTPRouteRuleApplyConfiguration
	return out, convert(rules, &out)
}

// convert copies a typed Gateway API value into its apply configuration. The generated apply
// configuration types mirror the API types field for field under the same JSON names, so a round
// trip through encoding/json carries exactly the fields the typed value holds (every set field is
// sent, as it must be for the atomic rules list); nothing is written by hand.
// errors: a value that does not encode (a bug).
func convert(from, to any) error {
	data, err := json.Marshal(from)
	if err != nil {
		return fmt.Errorf("encoding %T: %w", from, err)
	}
	if err := json.Unmarshal(data, to); err != nil {
		return fmt.Errorf("converting %T to %T: %w", from, to, err)
	}
	return nil
}
