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

// ErrRouteNotFound means the route a provider reads or edits does not exist (yet).
var ErrRouteNotFound = errors.New("route not found")

// ErrWeightDrift means the route's weights differ from what Sluice last set (someone edited them).
var ErrWeightDrift = errors.New("route weights differ from the desired weights")

// Router shifts traffic between the primary and canary backends of one Canary. Every method does
// I/O against the apiserver and takes ctx first. Implementations edit only the backends they
// manage, with server-side apply and FieldManager; every other rule, match, filter, retry and
// timeout stays as the user wrote it.
type Router interface {
	// Reconcile creates or updates the route objects (generated mode) or checks that the referenced
	// route exists and points at the apex service (reference mode). It never changes the current
	// weights of an existing route; a new route starts at 100/0.
	// errors: ErrRouteNotFound (reference mode), API errors.
	Reconcile(ctx context.Context, canary *sluicev1.Canary) error

	// SetRoutes writes the split. errors: Weights.Validate errors, ErrRouteNotFound, API errors.
	SetRoutes(ctx context.Context, canary *sluicev1.Canary, w Weights) error

	// GetRoutes reads the current split back from the route object.
	// errors: ErrRouteNotFound, a route whose managed weights do not sum to TotalWeight.
	GetRoutes(ctx context.Context, canary *sluicev1.Canary) (Weights, error)

	// Finalize restores the user's routing when the Canary is deleted with revertOnDeletion. The
	// caller first makes the apex Service select the target's pods again. Reference mode then puts
	// back the backends the user wrote (the original route, as it was before Sluice's first edit);
	// generated mode deletes the generated route objects. errors: API errors.
	Finalize(ctx context.Context, canary *sluicev1.Canary) error
}

// VerifyWeight reports ErrWeightDrift (wrapped, with both splits) when the route's split differs
// from want.
func VerifyWeight(ctx context.Context, r Router, canary *sluicev1.Canary, want Weights) error {
	got, err := r.GetRoutes(ctx, canary)
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("%w: route has primary=%d canary=%d, want primary=%d canary=%d",
			ErrWeightDrift, got.Primary, got.Canary, want.Primary, want.Canary)
	}
	return nil
}

// ServiceNames are the names of the three Services of a Canary.
type ServiceNames struct {
	Apex, Primary, Canary string
}

// NamesFor returns the apex, primary and canary Service names: spec.service.name (default the
// target's name), with -primary and -canary suffixes.
func NamesFor(canary *sluicev1.Canary) ServiceNames {
	apex := canary.Spec.Service.Name
	if apex == "" {
		apex = canary.Spec.TargetRef.Name
	}
	return ServiceNames{Apex: apex, Primary: apex + "-primary", Canary: apex + "-canary"}
}
