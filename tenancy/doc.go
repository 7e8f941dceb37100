// Package tenancy holds the rules that let several teams share one Sluice: which namespaces a
// namespaced object may reference other objects in (RefPolicy), and which hosts, gateways and
// parents a route Sluice generates for a Canary may name (RoutePolicy).
//
// A Canary's templateRef and providerRef may name their namespace. By default only two are
// allowed: the Canary's own and the controller's, where a platform team keeps shared
// MetricTemplates and AlertProviders. Anything else would let a Canary query with another team's
// credentials or post to another team's channel. --allow-cross-namespace-refs allows every
// namespace. Cluster-scoped objects (a DataPlane) are written by cluster administrators and may
// reference any namespace.
//
// Sluice writes generated routes with its own identity, so RoutePolicy keeps them to the Canary's
// namespace (its hosts, its gateways and parents) unless the operator allows more hostnames and
// parents; see docs/multi-tenancy-routes.md.
package tenancy
