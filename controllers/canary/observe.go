package canary

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"sluice.dev/sluice/analysis"
	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/canary/plan"
	"sluice.dev/sluice/controllers/internal/reconcilekit"
	"sluice.dev/sluice/providers"
)

// observation is what one tick saw: the planner's input and the objects the actions work on.
type observation struct {
	plan.Observed
	router  providers.Router
	target  *appsv1.Deployment
	primary *appsv1.Deployment
	refs    []configRef
}

// observe validates the spec and reads (and converges) everything the planner needs: the target
// and the checksums of its tracked configs (its revision), the Services, the primary, the route (created or checked, then read back), the metrics servers while
// initializing, and the holds on the run. errors: stalled for what only a change to the spec or
// the cluster fixes.
func (r *Reconciler) observe(ctx context.Context, tick *reconcilekit.Tick, canary *sluicev1.Canary) (*observation, error) {
	router, err := r.validate(canary)
	if err != nil {
		return nil, err
	}
	if err := r.targetConflict(ctx, canary); err != nil {
		return nil, err
	}
	target, err := r.target(ctx, canary)
	if err != nil {
		return nil, err
	}
	refs := configRefs(&target.Spec.Template.Spec)
	tracked, err := r.trackedConfigs(ctx, canary.Namespace, refs)
	if err != nil {
		return nil, err
	}
	revision := revisionOf(&target.Spec.Template, tracked)
	if err := r.ensureServices(ctx, canary, target); err != nil {
		return nil, err
	}
	primary, err := r.readPrimary(ctx, canary, target, revision)
	if err != nil {
		return nil, err
	}
	if err := router.Reconcile(ctx, canary); err != nil {
		return nil, fmt.Errorf("reconciling routes: %w", err)
	}
	down, err := r.metricsServerDown(ctx, canary)
	if err != nil {
		return nil, err
	}
	obs := &observation{router: router, target: target, primary: primary, refs: refs, Observed: plan.Observed{
		Now: tick.Now(), Spec: canary.Spec, Status: canary.Status, Revision: revision, TrackedConfigs: tracked,
		Primary:           primaryWorkload(primary),
		Canary:            workloadOf(target, revision),
		MetricsServerDown: down,
		Requests: map[string]string{
			sluicev1.AnnotationPromote: canary.Annotations[sluicev1.AnnotationPromote],
			sluicev1.AnnotationAbort:   canary.Annotations[sluicev1.AnnotationAbort],
			sluicev1.AnnotationRetry:   canary.Annotations[sluicev1.AnnotationRetry],
		},
	}}
	r.readRoute(ctx, canary, obs)
	if obs.Hold, err = r.hold(ctx, canary, obs.Observed); err != nil {
		return nil, err
	}
	return obs, nil
}

// validate reports spec problems admission cannot catch (or objects written before a rule
// existed): a provider this controller does not run, metrics that cannot be evaluated as
// written. It returns the Canary's router.
func (r *Reconciler) validate(canary *sluicev1.Canary) (providers.Router, error) {
	router, ok := r.Routers[providerOf(canary)]
	if !ok {
		return nil, reconcilekit.Stalled(sluicev1.ReasonInvalidSpec, "provider %q is not enabled in this controller", providerOf(canary))
	}
	if len(canary.Spec.Analysis.Metrics) == 0 {
		return router, nil
	}
	if r.Analyzer == nil {
		return nil, reconcilekit.Stalled(sluicev1.ReasonInvalidSpec, "spec.analysis has metrics but this controller has no analyzer")
	}
	if err := r.Analyzer.Validate(canary); err != nil {
		return nil, reconcilekit.Stalled(sluicev1.ReasonInvalidSpec, "%w", err)
	}
	return router, nil
}

// readRoute reads the route's weights and A/B state back into obs; a route that cannot be read
// is unknown to the planner (and logged once the Canary is initialized).
func (r *Reconciler) readRoute(ctx context.Context, canary *sluicev1.Canary, obs *observation) {
	w, err := obs.router.GetRoutes(ctx, canary)
	if err != nil {
		if canary.Status.Phase != "" && canary.Status.Phase != sluicev1.CanaryPhaseInitializing {
			log.FromContext(ctx).Info("Reading route weights failed", "error", err.Error())
		}
		return
	}
	obs.RouteWeight, obs.RouteKnown = w.Canary, true
	if on, err := obs.router.GetABRoutes(ctx, canary); err == nil {
		obs.RouteABOn, obs.RouteABKnown = on, true
	}
}

func providerOf(canary *sluicev1.Canary) sluicev1.Provider {
	if canary.Spec.Provider == "" {
		return sluicev1.ProviderGatewayAPI
	}
	return canary.Spec.Provider
}

// targetConflict stalls every Canary but the oldest that targets the same Deployment: two
// controllers of one workload would fight over its replicas, primary and route. It reads the
// Canaries of the target through the target index (the cache's, or the apiserver's selectable
// field), without copying them.
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

// target reads the Canary's target Deployment. errors: stalled when missing.
func (r *Reconciler) target(ctx context.Context, canary *sluicev1.Canary) (*appsv1.Deployment, error) {
	target := &appsv1.Deployment{}
	key := client.ObjectKey{Namespace: canary.Namespace, Name: canary.Spec.TargetRef.Name}
	if err := r.Get(ctx, key, target); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, reconcilekit.Stalled(sluicev1.ReasonTargetNotFound, "target deployment %s not found", key.Name)
		}
		return nil, fmt.Errorf("reading target deployment %s: %w", key.Name, err)
	}
	if _, err := primarySelector(target); err != nil {
		return nil, reconcilekit.Stalled(sluicev1.ReasonInvalidSpec, "%w", err)
	}
	return target, nil
}

// metricsServerDown asks, while the Canary initializes, whether the metrics servers its analysis
// uses answer; it returns why not (the planner keeps initializing), or "" when they do or it need
// not ask. errors: stalled when the analysis names something that does not exist (a missing
// MetricTemplate or Secret, a template that does not render).
func (r *Reconciler) metricsServerDown(ctx context.Context, canary *sluicev1.Canary) (string, error) {
	phase := canary.Status.Phase
	if phase != "" && phase != sluicev1.CanaryPhaseInitializing {
		return "", nil
	}
	if canary.Spec.SkipAnalysis || len(canary.Spec.Analysis.Metrics) == 0 {
		return "", nil
	}
	err := r.Analyzer.Ready(ctx, canary)
	switch {
	case err == nil:
		return "", nil
	case errors.Is(err, analysis.ErrUnreachable):
		return err.Error(), nil
	default:
		return "", reconcilekit.Stalled(sluicev1.ReasonInvalidSpec, "analysis: %w", err)
	}
}
