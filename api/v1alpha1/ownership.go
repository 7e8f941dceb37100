package v1alpha1

// LabelCanary is Sluice's ownership label: every object Sluice creates for a Canary (the primary
// Deployment, the -primary and -canary Services, the -primary ConfigMap and Secret copies, the
// generated routes) carries it with the Canary's name as value. Sluice never adopts, overwrites
// or deletes an object of those names without it.
const LabelCanary = "sluice.dev/canary"

// LabelServiceRole marks the role of a Service Sluice creates; only the primary Service carries
// it, as LabelServiceRole=ServiceRolePrimary. The EndpointSlice controller copies a Service's
// labels onto its EndpointSlices, so the controller's cache selects the primary Services' slices
// by this label alone (never every EndpointSlice of the cluster): the tick that returns all
// traffic to the primary judges them without a request to the apiserver.
const LabelServiceRole = "sluice.dev/service-role"

// ServiceRolePrimary is LabelServiceRole's value on the primary Service.
const ServiceRolePrimary = "primary"

// Condition reasons of tenancy and security refusals.
const (
	// ReasonCrossNamespaceRef: a templateRef or providerRef names a namespace the controller's
	// policy does not allow (see --allow-cross-namespace-refs); nothing was read or sent.
	ReasonCrossNamespaceRef = "CrossNamespaceRefRefused"
	// ReasonDestinationRefused: a webhook URL or metrics server address is one the egress policy
	// refuses (loopback, cluster-internal, link-local, cloud metadata, ...) or not on the
	// controller's allowed destinations; nothing was sent.
	ReasonDestinationRefused = "DestinationRefused"
	// ReasonRouteRefused: the route generated for the Canary would name a host, gateway or parent
	// outside its namespace that the controller's route policy does not allow (see
	// --allowed-route-hostnames, --allowed-route-parents); no route was created or changed.
	ReasonRouteRefused = "RouteRefused"
	// ReasonNotOwned: an object Sluice would create or change exists without Sluice's ownership
	// label; Sluice leaves it alone.
	ReasonNotOwned = "NotOwned"
	// ReasonServiceAdopted: Sluice took over an existing Service as the apex Service.
	ReasonServiceAdopted = "ServiceAdopted"
)
