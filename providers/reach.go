package providers

import (
	"context"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// ReachPinner is implemented by the Routers whose generated route carries fields of spec.service
// that can name something outside the Canary's namespace: hosts, Istio gateways, Gateway API
// parents. When the spec asks for a reach the controller's route policy refuses, the controller
// still moves traffic between primary and canary (a rollback) through the copy PinReach returns,
// so the route keeps reaching exactly what it reaches now.
type ReachPinner interface {
	// PinReach returns a copy of canary whose spec.service hosts, gateways and gatewayRefs are
	// what the generated route carries now; a write through the copy changes the route's rules
	// and weights, never its hosts, gateways or parents. A Canary with a routeRef is returned as
	// it is (Sluice never writes a referenced route's hosts or parents). canary is not modified.
	// errors: ErrRouteNotFound when there is no generated route (nothing to pin: creating one
	// would publish the refused reach), the provider's conflict error when the route is not the
	// Canary's, API errors.
	PinReach(ctx context.Context, canary *sluicev1.Canary) (*sluicev1.Canary, error)
}
