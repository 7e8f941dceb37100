// Package tenancy holds the rules that let several teams share one Sluice: which namespaces a
// namespaced object may reference other objects in (RefPolicy).
//
// A Canary's templateRef and providerRef may name their namespace. By default only two are
// allowed: the Canary's own and the controller's, where a platform team keeps shared
// MetricTemplates and AlertProviders. Anything else would let a Canary query with another team's
// credentials or post to another team's channel. --allow-cross-namespace-refs allows every
// namespace. Cluster-scoped objects (a DataPlane) are written by cluster administrators and may
// reference any namespace.
package tenancy
