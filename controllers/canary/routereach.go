package canary

import (
	"context"
	"fmt"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/canary/plan"
	"sluice.dev/sluice/controllers/internal/reconcilekit"
	"sluice.dev/sluice/providers"
)

// routeReach applies the route policy (Options.Routes) to the Canary's spec before the tick reads
// or writes anything: Sluice writes routes with its own identity, so a route for a host, gateway
// or parent outside the Canary's namespace would be one the Canary's author may not write. For an
// allowed spec it returns router as it is. For a refused one:
//   - before the Canary has routes (no phase yet, Initializing): errors, a stall naming each
//     refused field; nothing is created, not even the primary;
//   - afterwards: the stall as a planner hold (the run takes no step and does not promote, its
//     checks go on, the failed-check threshold and the progress deadline roll it back; a new
//     revision waits), and a Router that never changes what the route reaches (reachPinned):
//     the route stays as it is until a decision moves traffic, and that write keeps the route's
//     current hosts, gateways and parents.
func (r *Reconciler) routeReach(canary *sluicev1.Canary, router providers.Router) (providers.Router, *plan.Hold, error) {
	err := r.Routes.CheckCanary(canary)
	if err == nil {
		return router, nil, nil
	}
	stall := reconcilekit.Stalled(sluicev1.ReasonRouteRefused, "%w", err)
	if p := canary.Status.Phase; p == "" || p == sluicev1.CanaryPhaseInitializing {
		return nil, nil, stall
	}
	return reachPinned{Router: router}, stallOf(stall), nil
}

// reachPinned is the Router of a Canary whose spec asks for a route reach the policy refuses.
// Reconcile writes nothing (it would apply the spec's hosts, gateways and parents); every other
// write goes through the Canary pinned to what the generated route reaches now
// (providers.ReachPinner), so it moves traffic between primary and canary and nothing else.
// Reads are the Router's.
type reachPinned struct {
	providers.Router
}

// errNotPinnable: the provider cannot say what its route reaches, so no write is safe.
var errNotPinnable = providers.Permanent(sluicev1.ReasonRouteRefused, "the route's reach cannot be kept: no route write is made while the spec is refused")

func (p reachPinned) pin(ctx context.Context, canary *sluicev1.Canary) (*sluicev1.Canary, error) {
	pinner, ok := p.Router.(providers.ReachPinner)
	if !ok {
		return nil, errNotPinnable
	}
	pinned, err := pinner.PinReach(ctx, canary)
	if err != nil {
		return nil, fmt.Errorf("keeping the route's hosts, gateways and parents: %w", err)
	}
	return pinned, nil
}

// Reconcile writes nothing: the route stays as it is.
func (p reachPinned) Reconcile(context.Context, *sluicev1.Canary) error { return nil }

func (p reachPinned) SetRoutes(ctx context.Context, canary *sluicev1.Canary, w providers.Weights) error {
	pinned, err := p.pin(ctx, canary)
	if err != nil {
		return err
	}
	return p.Router.SetRoutes(ctx, pinned, w)
}

func (p reachPinned) SetABRoutes(ctx context.Context, canary *sluicev1.Canary, on bool) error {
	pinned, err := p.pin(ctx, canary)
	if err != nil {
		return err
	}
	return p.Router.SetABRoutes(ctx, pinned, on)
}

func (p reachPinned) SetMirror(ctx context.Context, canary *sluicev1.Canary, percent int32) error {
	pinned, err := p.pin(ctx, canary)
	if err != nil {
		return err
	}
	return p.Router.SetMirror(ctx, pinned, percent)
}

func (p reachPinned) SetSessionAffinity(ctx context.Context, canary *sluicev1.Canary, cookie string) error {
	pinned, err := p.pin(ctx, canary)
	if err != nil {
		return err
	}
	return p.Router.SetSessionAffinity(ctx, pinned, cookie)
}
