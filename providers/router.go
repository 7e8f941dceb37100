package providers

import (
	"context"
	"errors"
	"fmt"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// FieldManager is the server-side apply field manager of every object Sluice writes.
const FieldManager = "sluice"

// TotalWeight is what primary and canary weights always sum to.
const TotalWeight = 100

// Weights is a traffic split in percent. Primary + Canary == TotalWeight.
type Weights struct {
	Primary int32
	Canary  int32
}

// Validate reports weights outside 0..100 or not summing to TotalWeight.
func (w Weights) Validate() error {
	if w.Primary < 0 || w.Canary < 0 || w.Primary+w.Canary != TotalWeight {
		return fmt.Errorf("invalid weights primary=%d canary=%d: each must be 0..%d and sum to %d",
			w.Primary, w.Canary, TotalWeight, TotalWeight)
	}
	return nil
}

// CanaryWeight returns the split with canary weight c.
func CanaryWeight(c int32) Weights { return Weights{Primary: TotalWeight - c, Canary: c} }

// ABRuleNamePrefix starts the name of every A/B rule (Gateway API HTTPRouteRule name, Istio
// HTTPRoute name) a Router writes: an A/B rule copying rule i of the route is named
// ABRuleNamePrefix + i (with "-" + k appended when one rule needs several, see package
// gatewayapi). A rule its owner names with this prefix would be taken for an A/B rule.
const ABRuleNamePrefix = "sluice-ab-"

// AffinityRuleNamePrefix starts the name of every session-affinity rule (Gateway API
// HTTPRouteRule name, Istio HTTPRoute name) a Router writes: the copy of rule i that sends
// requests carrying the affinity cookie to the canary is named AffinityRuleNamePrefix + i.
const AffinityRuleNamePrefix = "sluice-affinity-"

// AffinityCookieValuePrefix starts the value of every session-affinity cookie Sluice hands out,
// which is how a Router recognises the Set-Cookie header it added.
const AffinityCookieValuePrefix = "sluice-"

// AffinityCookie is the session-affinity cookie ("name=value") of the run of revision: one value
// per run, so a cookie from an earlier run never matches a later run's rule.
func AffinityCookie(name, revision string) string {
	return name + "=" + AffinityCookieValuePrefix + revision
}

// SetCookie is the Set-Cookie header value that hands out cookie ("name=value") for maxAge
// seconds, for every path.
func SetCookie(cookie string, maxAge int32) string {
	return fmt.Sprintf("%s; Max-Age=%d; Path=/", cookie, maxAge)
}

// ErrRouteNotFound means the route a provider reads or edits does not exist (yet): from Reconcile
// in reference mode, the route spec.service.routeRef names. Permanent until someone creates it.
var ErrRouteNotFound error = Permanent(sluicev1.ReasonRouteNotFound, "route not found")

// ErrWeightDrift means the route's weights differ from what Sluice last set (someone edited them).
var ErrWeightDrift = errors.New("route weights differ from the desired weights")

// Router shifts traffic between the primary and canary backends of one Canary. Every method does
// I/O against the apiserver and takes ctx first. Implementations edit only the backends they
// manage, with server-side apply and FieldManager; every other rule, match, filter, retry and
// timeout stays as the user wrote it.
type Router interface {
	// Reconcile creates or updates the route objects (generated mode) or checks that the referenced
	// route exists and points at the apex service (reference mode). It never changes the current
	// weights of an existing route, and never turns A/B routing on or off; a new route starts at
	// 100/0 without A/B rules. A/B rules already present are converged to spec.analysis.match and
	// to the rules they copy (removed when the spec no longer has an A/B match), so an edited
	// match or an edited rule is followed; this is the only write Reconcile makes in reference mode.
	// errors: ErrRouteNotFound (reference mode), API errors.
	Reconcile(ctx context.Context, canary *sluicev1.Canary) error

	// SetRoutes writes the split to the weighted rules; A/B rules are kept as they are (present or
	// absent). errors: Weights.Validate errors, ErrRouteNotFound, API errors.
	SetRoutes(ctx context.Context, canary *sluicev1.Canary, w Weights) error

	// GetRoutes reads the current split back from the weighted rules of the route object; A/B
	// rules are not counted, so during an A/B run it reads the weights SetRoutes set (0 for the
	// canary), whether A/B routing is on or not.
	// errors: ErrRouteNotFound, a route whose managed weights do not sum to TotalWeight.
	GetRoutes(ctx context.Context, canary *sluicev1.Canary) (Weights, error)

	// SetABRoutes turns A/B routing (spec.analysis.match) on or off, leaving the weights as they
	// are. On: before every rule (Istio: HTTP route) that sends traffic to the Canary's Services,
	// an A/B rule is inserted: a copy of that rule (filters, timeouts, retries, everything) whose
	// matches are the rule's matches AND one of spec.analysis.match, and whose managed backends
	// send everything to the canary (primary weight 0, canary weight 100); requests matching
	// spec.analysis.match then reach the canary and all others follow the weighted rules. Off:
	// the A/B rules are removed. A/B rules are named ABRuleNamePrefix followed by the index of the
	// rule they copy, which is how every method tells them apart (that prefix is reserved). A
	// Canary without spec.analysis.match gets no A/B rules. Nothing is written when the route is
	// already as asked. Callers turn A/B routing on only while the canary has ready endpoints.
	// errors: ErrRouteNotFound, a provider's invalid-spec error when a rule's match cannot be
	// combined with spec.analysis.match or the route would exceed its schema's limits, API errors.
	SetABRoutes(ctx context.Context, canary *sluicev1.Canary, on bool) error

	// GetABRoutes reports whether the route holds A/B rules. errors: as GetRoutes's read.
	GetABRoutes(ctx context.Context, canary *sluicev1.Canary) (bool, error)

	// SetMirror copies percent (1–100) of the requests of every rule that routes to the Canary's
	// Services to the canary Service (responses discarded), or stops (0): a RequestMirror filter
	// (Gateway API) or the route's mirror (Istio) on those rules only, weights and A/B rules kept,
	// every other rule untouched. Nothing is written when the route is already so. Callers mirror
	// only while the canary has ready endpoints. errors: ErrRouteNotFound, a provider's
	// invalid-spec error (the route already mirrors elsewhere, a provider that cannot mirror),
	// API errors.
	SetMirror(ctx context.Context, canary *sluicev1.Canary, percent int32) error

	// GetMirror reads the mirrored percentage back (0: none). errors: as GetRoutes's read.
	GetMirror(ctx context.Context, canary *sluicev1.Canary) (int32, error)

	// SetSessionAffinity turns session affinity on for cookie ("name=value", see AffinityCookie)
	// or off (""): the canary backends of the managed rules add SetCookie(cookie, maxAge) to their
	// responses, and before each managed rule i a rule named AffinityRuleNamePrefix + i sends the
	// requests carrying the cookie to the canary. Off removes both. Weights, A/B rules and every
	// other rule are kept; nothing is written when the route is already so. Callers turn it off
	// before the canary scales down. errors: as SetMirror.
	SetSessionAffinity(ctx context.Context, canary *sluicev1.Canary, cookie string) error

	// GetSessionAffinity reads the cookie back ("": none). errors: as GetRoutes's read.
	GetSessionAffinity(ctx context.Context, canary *sluicev1.Canary) (string, error)

	// Finalize restores the user's routing when the Canary is deleted with revertOnDeletion. The
	// caller first makes the apex Service select the target's pods again. Reference mode then undoes
	// Sluice's edits and only those: its A/B, session-affinity and mirror additions go and every
	// primary/canary pair becomes the apex backend the user wrote (from the original route recorded
	// before Sluice's first edit); everything the user changed since adoption stays as it is now.
	// Generated mode deletes the generated route objects. errors: API errors.
	Finalize(ctx context.Context, canary *sluicev1.Canary) error
}
