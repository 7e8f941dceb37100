// Package gatewayapi implements providers.Router with a Gateway API HTTPRoute
// (gateway.networking.k8s.io/v1, standard channel).
//
// A Canary either lets Sluice generate its HTTPRoute (parentRefs from spec.service.gatewayRefs:
// a Gateway for north-south traffic, a Service for east-west mesh traffic as in GAMMA and Linkerd)
// or points spec.service.routeRef at an HTTPRoute the user wrote, of which Sluice rewrites only the
// backendRefs to the apex Service: each becomes a weighted pair of backendRefs to <apex>-primary and
// <apex>-canary with the same port and filters. Every other rule, match, filter, timeout and
// backendRef stays as written, and the user's rules are recorded in an annotation so that Finalize
// can put them back.
//
// A/B routing (SetABRoutes, for spec.analysis.match) inserts before every rule that routes to the
// Canary's Services an A/B rule named sluice-ab-<index of that rule>: a copy of the rule whose
// matches are the rule's matches combined with the A/B matches and whose Canary backends send
// everything to <apex>-canary. Gateway API precedence makes the combined match win over the
// rule's own (see withABRules). GetRoutes and SetRoutes leave A/B rules out; Finalize puts back
// the recorded rules, which never hold them.
//
// Writes are server-side applies with field manager providers.FieldManager. HTTPRoute spec.rules
// is an atomic list, so Sluice sends (and owns) the whole list, re-read from the route just before;
// the apply carries the resourceVersion it read, so a concurrent edit fails the write instead of
// being lost.
//
// Limits:
//   - A/B rules count against the HTTPRoute's 16 rules and 128 matches; an A/B match that cannot be
//     combined with a rule's match in one HTTPRouteMatch (two regular expressions, a regular
//     expression path against another path, a narrower path on a rule that rewrites its matched
//     prefix) is refused with ErrInvalidSpec.
//   - spec.service.retries is not rendered: HTTPRouteRule.retry is in Gateway API v1.6's
//     experimental channel only, and the standard-channel CRD rejects the field.
//   - Reference mode re-sends the rules through the v1.6 Go types: a field added by a newer
//     Gateway API CRD that these types do not know would be dropped from the rules Sluice writes.
package gatewayapi
