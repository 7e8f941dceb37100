package canary

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"sluice.dev/sluice/analysis"
	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/canary/plan"
	"sluice.dev/sluice/controllers/internal/reconcilekit"
	"sluice.dev/sluice/providers"
)

// reconcileRun runs the lifecycle step and turns its error into conditions: a stall (only a
// change to the spec or the cluster fixes it) is looked at again after one interval.
func (r *Reconciler) reconcileRun(ctx context.Context, tick *reconcilekit.Tick, canary *sluicev1.Canary) (ctrl.Result, error) {
	r.checkAlertProviders(ctx, tick, canary)
	res, err := r.step(ctx, tick, canary)
	return tick.Settle(res, stallPermanent(err), plan.Interval(canary.Spec))
}

func (r *Reconciler) step(ctx context.Context, tick *reconcilekit.Tick, canary *sluicev1.Canary) (ctrl.Result, error) {
	router, ok := r.Routers[providerOf(canary)]
	if !ok {
		return ctrl.Result{}, reconcilekit.Stalled(sluicev1.ReasonInvalidSpec, "provider %q is not enabled in this controller", providerOf(canary))
	}
	if err := r.checkAccess(canary); err != nil {
		return ctrl.Result{}, err
	}
	if err := analysis.ValidateIntervals(canary, r.scrapeInterval()); err != nil {
		return ctrl.Result{}, reconcilekit.Stalled(sluicev1.ReasonInvalidSpec, "%w", err)
	}
	if err := r.targetConflict(ctx, canary); err != nil {
		return ctrl.Result{}, err
	}
	target, err := r.target(ctx, canary)
	if err != nil {
		return ctrl.Result{}, err
	}
	refs := configRefs(&target.Spec.Template.Spec)
	tracked, err := r.trackedConfigs(ctx, canary.Namespace, refs)
	if err != nil {
		return ctrl.Result{}, err
	}
	revision := revisionOf(&target.Spec.Template, tracked)
	if err := r.checkNameClashes(ctx, canary, target, refs); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.ensureServices(ctx, tick, canary, target); err != nil {
		return ctrl.Result{}, err
	}
	primary, err := r.ensurePrimary(ctx, tick, canary, target, refs, revision)
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := r.ensureAutoscalers(ctx, canary, primary); err != nil {
		return ctrl.Result{}, err
	}
	if err := router.Reconcile(ctx, canary); err != nil {
		return ctrl.Result{}, fmt.Errorf("reconciling routes: %w", err)
	}
	if wait, err := r.metricsReady(ctx, canary); err != nil || wait {
		return ctrl.Result{RequeueAfter: plan.PollInterval}, err
	}

	o := plan.Observed{
		Now: tick.Now(), Spec: canary.Spec, Status: canary.Status, Revision: revision, TrackedConfigs: tracked,
		Primary: workloadOf(primary, primary.Annotations[AnnotationRevision]),
		Canary:  workloadOf(target, revision),
		Requests: map[string]string{
			sluicev1.AnnotationPromote: canary.Annotations[sluicev1.AnnotationPromote],
			sluicev1.AnnotationAbort:   canary.Annotations[sluicev1.AnnotationAbort],
			sluicev1.AnnotationRetry:   canary.Annotations[sluicev1.AnnotationRetry],
		},
	}
	if w, err := router.GetRoutes(ctx, canary); err == nil {
		o.RouteWeight, o.RouteKnown = w.Canary, true
		if on, err := router.GetABRoutes(ctx, canary); err == nil {
			o.RouteABOn, o.RouteABKnown = on, true
		}
		observeExtras(ctx, router, canary, &o)
	} else if canary.Status.Phase != "" && canary.Status.Phase != sluicev1.CanaryPhaseInitializing {
		log.FromContext(ctx).Info("Reading route weights failed", "error", err.Error())
	}
	if hold, err := r.hold(ctx, canary, o); err != nil {
		return ctrl.Result{}, err
	} else {
		o.Hold = hold
	}
	gatesDue := len(plan.GatesDue(o)) > 0
	if gatesDue || plan.AnalysisDue(o) {
		// Gates and checks are side effects that must not run twice: act on a current Canary.
		if stale, err := tick.Kit().IsStale(ctx, canary); err != nil || stale {
			return reconcilekit.StaleResult(), err
		}
	}
	if gatesDue {
		gates, pending := r.resolveGates(canary, o)
		if pending {
			return ctrl.Result{RequeueAfter: gatePoll}, nil
		}
		o.Gates = gates
	}
	if plan.AnalysisDue(o) {
		check, err := r.Analyzer.Analyze(ctx, canary, o.Now)
		if ctx.Err() != nil {
			return ctrl.Result{}, ctx.Err()
		}
		if err != nil {
			return ctrl.Result{}, reconcilekit.Stalled(sluicev1.ReasonInvalidSpec, "analysis: %w", err)
		}
		o.Check = &plan.Check{Failed: check.Failed(), Summary: check.Summary(), Results: check.Results}
	}

	d := plan.Decide(o)
	if err := r.execute(ctx, canary, router, target, primary, refs, d); err != nil {
		return ctrl.Result{}, err
	}
	canary.Status = d.Status
	tick.Event(d.Events...)
	setPhaseConditions(canary, o.Hold, d.Events)
	observeMetrics(canary, d.Events)
	r.queueHooks(tick, canary, d.Events)
	r.queueNotifications(tick, canary, d.Events)
	return ctrl.Result{RequeueAfter: d.RequeueAfter}, nil
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
	return defaultScrapeInterval
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

// target reads the Canary's target Deployment. errors: stalled when missing.
func (r *Reconciler) target(ctx context.Context, canary *sluicev1.Canary) (*appsv1.Deployment, error) {
	if kind := canary.Spec.TargetRef.Kind; kind != "" && kind != "Deployment" {
		return nil, reconcilekit.Stalled(sluicev1.ReasonInvalidSpec,
			"spec.targetRef.kind %s: this controller delivers Deployments only; DaemonSet targets are accepted by the API but not implemented yet", kind)
	}
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

// metricsReady keeps an initializing Canary waiting, with a condition, while its metrics server
// does not answer. It reports whether to wait.
func (r *Reconciler) metricsReady(ctx context.Context, canary *sluicev1.Canary) (bool, error) {
	phase := canary.Status.Phase
	if phase != "" && phase != sluicev1.CanaryPhaseInitializing {
		return false, nil
	}
	if canary.Spec.SkipAnalysis || len(canary.Spec.Analysis.Metrics) == 0 || r.Analyzer == nil {
		return false, nil
	}
	if err := r.Analyzer.Ready(ctx, canary); err != nil {
		if !errors.Is(err, analysis.ErrUnreachable) {
			// A missing MetricTemplate or Secret, a template that does not render: fix the spec.
			return false, reconcilekit.Stalled(sluicev1.ReasonInvalidSpec, "analysis: %w", err)
		}
		canary.Status.Phase = sluicev1.CanaryPhaseInitializing
		reconcilekit.MarkWaiting(canary, sluicev1.ReasonMetricsUnreachable, fmt.Sprintf("Waiting for the metrics server: %v", err))
		return true, nil
	}
	return false, nil
}
