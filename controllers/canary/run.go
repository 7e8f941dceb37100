package canary

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"sluice.dev/sluice/analysis"
	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/canary/plan"
	"sluice.dev/sluice/controllers/internal/reconcilekit"
	"sluice.dev/sluice/providers"
)

// reconcileRun runs the lifecycle step and turns its outcome into conditions. A stall (only a
// change to the spec or the cluster fixes it) is looked at again after one interval; a stall met
// during a run went to the planner too (checks go on, the progress deadline ends the run) and is
// reported the same way.
func (r *Reconciler) reconcileRun(ctx context.Context, tick *reconcilekit.Tick, canary *sluicev1.Canary) (ctrl.Result, error) {
	r.checkAlertProviders(ctx, tick, canary)
	res, stall, err := r.step(ctx, tick, canary)
	if err == nil && stall != nil {
		err = reconcilekit.Stalled(stall.Reason, "%s", stall.Message)
		if res.RequeueAfter > 0 && res.RequeueAfter < plan.Interval(canary.Spec) {
			// The run goes on under the stall: keep its pace, and report the stall.
			settled, _ := tick.Settle(res, err, res.RequeueAfter)
			return settled, nil
		}
	}
	return tick.Settle(res, stallPermanent(err), plan.Interval(canary.Spec))
}

// step runs one tick: observe → gather (gates, analysis) → decide → apply. It returns the stall
// the planner saw, if any.
func (r *Reconciler) step(ctx context.Context, tick *reconcilekit.Tick, canary *sluicev1.Canary) (ctrl.Result, *plan.Hold, error) {
	router, ok := r.Routers[providerOf(canary)]
	if !ok {
		return ctrl.Result{}, nil, reconcilekit.Stalled(sluicev1.ReasonInvalidSpec, "provider %q is not enabled in this controller", providerOf(canary))
	}
	if err := r.checkAccess(canary); err != nil {
		return ctrl.Result{}, nil, err
	}
	router, routeStall, err := r.routeReach(canary, router)
	if err != nil {
		return ctrl.Result{}, nil, err
	}
	if err := r.targetConflict(ctx, canary); err != nil {
		return ctrl.Result{}, nil, err
	}
	obs, err := r.observe(ctx, tick, canary, router)
	if errors.Is(err, errWorkloadCacheBehind) || errors.Is(err, errTargetChanged) {
		return reconcilekit.StaleResult(), nil, nil
	}
	if err != nil {
		return ctrl.Result{RequeueAfter: plan.PollInterval}, nil, err
	}
	if routeStall != nil {
		obs.o.Stall = routeStall // the root cause to fix first
	}
	if res, done, err := r.gather(ctx, tick, canary, obs); done || err != nil {
		return res, obs.o.Stall, err
	}
	d := plan.Decide(obs.o)
	if plan.ReturnsAllTraffic(obs.o, d) {
		// Only a tick that moves all traffic back to the primary reads its endpoints (from the
		// cache; endpoints.go), and judges again with them (plan.Observed.PrimaryEndpoints).
		eps, err := r.primaryEndpoints(ctx, canary, obs.primary)
		if err != nil {
			return ctrl.Result{RequeueAfter: plan.PollInterval}, obs.o.Stall, err
		}
		if eps != nil {
			obs.o.PrimaryEndpoints = eps
			d = plan.Decide(obs.o)
		}
	}
	stall := obs.o.Stall
	if d.Stall != nil {
		stall = d.Stall
	}
	if err := r.apply(ctx, tick, canary, router, obs, d); err != nil {
		return ctrl.Result{}, stall, err
	}
	return ctrl.Result{RequeueAfter: d.RequeueAfter}, stall, nil
}

// stallPermanent turns a provider error that says the route or the spec can never work as it is
// (providers.IsPermanent, wherever in the tick it came from) into a stall with the provider's
// reason: retrying with backoff cannot fix it.
func stallPermanent(err error) error {
	if _, ok := reconcilekit.AsStalled(err); ok {
		return err
	}
	if reason, ok := providers.IsPermanent(err); ok {
		return reconcilekit.Stalled(reason, "%w", err)
	}
	return err
}

// targetKind is spec.targetRef.kind, Deployment when unset.
func targetKind(canary *sluicev1.Canary) string {
	if canary.Spec.TargetRef.Kind == "" {
		return kindDeployment
	}
	return canary.Spec.TargetRef.Kind
}

func providerOf(canary *sluicev1.Canary) sluicev1.Provider {
	if canary.Spec.Provider == "" {
		return sluicev1.ProviderGatewayAPI
	}
	return canary.Spec.Provider
}

func (r *Reconciler) scrapeInterval() time.Duration {
	if r.ScrapeInterval > 0 {
		return r.ScrapeInterval
	}
	return analysis.DefaultScrapeInterval
}

// targetConflict stalls every Canary but the oldest that targets the same Deployment: two
// controllers of one workload would fight over its replicas, primary and route. Every tick it
// reads only the Canaries of that target, through the target index (the cache's; on a client
// without a cache, the CRD's selectable field spec.targetRef.name), without copying them.
func (r *Reconciler) targetConflict(ctx context.Context, canary *sluicev1.Canary) error {
	list := &sluicev1.CanaryList{}
	if err := r.List(ctx, list, client.InNamespace(canary.Namespace), client.MatchingFields{indexTarget: canary.Spec.TargetRef.Name},
		client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("listing canaries of deployment %s: %w", canary.Spec.TargetRef.Name, err)
	}
	for i := range list.Items {
		other := &list.Items[i]
		if other.UID == canary.UID || !other.DeletionTimestamp.IsZero() {
			continue
		}
		older := other.CreationTimestamp.Before(&canary.CreationTimestamp) ||
			(other.CreationTimestamp.Equal(&canary.CreationTimestamp) && other.Name < canary.Name)
		if older {
			return reconcilekit.Stalled(sluicev1.ReasonTargetConflict, "deployment %s is already the target of canary %s; delete one of them",
				canary.Spec.TargetRef.Name, other.Name)
		}
	}
	return nil
}

// target reads the Canary's target workload (a Deployment, or a DaemonSet). errors: stalled when
// missing or of a kind Sluice does not deliver.
func (r *Reconciler) target(ctx context.Context, canary *sluicev1.Canary) (workload, error) {
	kind := targetKind(canary)
	if kind != kindDeployment && kind != kindDaemonSet {
		return nil, reconcilekit.Stalled(sluicev1.ReasonInvalidSpec, "spec.targetRef.kind %s: Sluice delivers Deployments and DaemonSets", kind)
	}
	target := newWorkload(kind)
	key := client.ObjectKey{Namespace: canary.Namespace, Name: canary.Spec.TargetRef.Name}
	if err := r.Get(ctx, key, target.obj()); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, reconcilekit.Stalled(sluicev1.ReasonTargetNotFound, "target %s %s not found", strings.ToLower(kind), key.Name)
		}
		return nil, fmt.Errorf("reading target %s %s: %w", strings.ToLower(kind), key.Name, err)
	}
	if _, err := primarySelector(target); err != nil {
		return nil, reconcilekit.Stalled(sluicev1.ReasonInvalidSpec, "%w", err)
	}
	return target, nil
}

// metricsReady reports why an initializing Canary must wait for its metrics server (nil: no
// wait), for the planner to keep it Initializing with that reason.
// errors: stalled for a spec problem (a missing MetricTemplate or Secret, a template that does
// not render).
func (r *Reconciler) metricsReady(ctx context.Context, canary *sluicev1.Canary) (*plan.Hold, error) {
	phase := canary.Status.Phase
	if phase != "" && phase != sluicev1.CanaryPhaseInitializing {
		return nil, nil
	}
	if canary.Spec.SkipAnalysis || len(canary.Spec.Analysis.Metrics) == 0 || r.Analyzer == nil {
		return nil, nil
	}
	if err := r.Analyzer.Ready(ctx, canary); err != nil {
		if !errors.Is(err, analysis.ErrUnreachable) {
			return nil, reconcilekit.Stalled(sluicev1.ReasonInvalidSpec, "analysis: %w", err)
		}
		return &plan.Hold{Reason: sluicev1.ReasonMetricsUnreachable, Message: fmt.Sprintf("Waiting for the metrics server: %v", err)}, nil
	}
	return nil, nil
}
