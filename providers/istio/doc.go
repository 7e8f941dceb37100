// Package istio implements providers.Router with Istio VirtualServices and DestinationRules
// (networking.istio.io/v1), written with server-side apply under field manager "sluice".
//
// # Generated mode (no spec.service.routeRef)
//
// Sluice owns a VirtualService named after the apex service, controlled by the Canary:
//
//	hosts:    [<apex>] + spec.service.hosts
//	gateways: spec.service.gateways (default [mesh])
//	http:
//	- match, retries, timeout, headers, corsPolicy from spec.service
//	  route: [<apex>-primary:<port> weight P, <apex>-canary:<port> weight C]
//
// and one DestinationRule per destination host (<apex>-primary, <apex>-canary) carrying
// spec.service.trafficPolicy. Reconcile creates the VirtualService at 100/0 and keeps the weights
// of an existing one; SetRoutes changes them.
//
// # Reference mode (spec.service.routeRef of kind VirtualService)
//
// The user's VirtualService (a delegate VirtualService, which has no hosts, works the same) stays
// the user's. Sluice manages exactly the destinations of spec.http[*].route that name the apex
// service, or its primary and canary services; everything else (other routes, matches, retries,
// timeouts, fault injection, CORS, headers, mirrors, rewrites, tcp and tls routes, hosts,
// gateways) is left as written. A host names a service S when it is S, S.<ns>, S.<ns>.svc or
// S.<ns>.svc.<cluster domain>, with <ns> the Canary's namespace.
//
// A managed HTTP route is edited as follows:
//
//   - All destinations name the apex host: they become two destinations, <apex>-primary and
//     <apex>-canary, in the host form the user wrote (short name or FQDN), with the port and
//     per-destination headers of the apex destinations. The subset is dropped: a subset names
//     pods inside the apex host through a DestinationRule for that host, which does not apply to
//     the primary and canary hosts; the primary and canary Services already select the two
//     versions. Several apex destinations in one route (the seed's stable/canary subsets at
//     90/10) collapse into the one primary/canary pair; they must agree on port and headers.
//   - The destinations already name the primary and canary hosts (the user split the route, or
//     Sluice did): only their weights change. A route naming just one of them gains the other,
//     copied from it without the subset.
//   - A route that mixes these hosts with any other host is rejected (ErrUnsupportedRoute): its
//     weights could not sum to 100 between primary and canary.
//
// Every managed route gets the same split. That includes a header-match route to the apex host
// (the seed's x-canary: "true" → subset canary): its match stays as written and it follows the
// split like every other route to the apex. A subset of the apex host is not the canary Sluice
// deploys, and pinning requests to a canary that is scaled down between runs would fail them;
// request-based routing to the canary is spec.analysis.match (A/B testing), not a subset in the
// user's route.
//
// # A/B routing
//
// SetABRoutes (spec.analysis.match, in both modes) inserts before every managed route an A/B route
// named sluice-ab-<index of that route>: a copy of the route (retries, timeout, rewrite, fault,
// mirror, …) whose match is each of the route's match requests combined with each A/B match, and
// whose destinations send everything to <apex>-canary (primary weight 0, canary 100). Istio takes
// the first route that matches, so requests matching both reach the canary while every earlier
// route keeps its requests. Combinations no request can satisfy are left out (x-canary: "true"
// with x-canary: insider); conditions one match request cannot hold together (two regular
// expressions on one header, a URI the route matches ignoring case or rewrites, narrowed by the
// A/B match) are refused with ErrInvalidSpec. GetRoutes and SetRoutes leave A/B routes out, and
// Finalize restores spec.http as recorded, without them.
//
// A route still pointing at the apex host (never edited, or re-applied by its owner) reads as
// 100/0: the apex Service selects the primary pods. Before its first edit Sluice stores the
// VirtualService spec (protojson) in the annotation sluice.dev/original-route; Finalize puts
// spec.http back from it and removes the annotation. Edits of spec.http that someone else made
// while the Canary managed the route are therefore reverted by Finalize.
//
// Writes in reference mode carry the resourceVersion that was read, so an edit is never computed
// from a stale (cached) copy: a concurrent change fails the write with a Conflict and the next
// tick retries. No method writes when the object already has the desired content.
package istio
