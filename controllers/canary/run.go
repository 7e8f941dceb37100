package canary

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"sluice.dev/sluice/analysis"
	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/canary/plan"
	"sluice.dev/sluice/providers"
	"sluice.dev/sluice/providers/gatewayapi"
	"sluice.dev/sluice/providers/istio"
)

// stalledError is a problem only a change to the spec or the cluster fixes: it becomes a Stalled
// condition and an event, and the Canary is looked at again after one interval.
type stalledError struct {
	reason string
	err    error
}

func (e *stalledError) Error() string { return e.err.Error() }
func (e *stalledError) Unwrap() error { return e.err }

func stalled(reason string, format string, args ...any) error {
	return &stalledError{reason: reason, err: fmt.Errorf(format, args...)}
}

// reconcileRun observes the target, primary and route, asks the plan what to do, and does it.
func (r *Reconciler) reconcileRun(ctx context.Context, canary *sluicev1.Canary, out *outbox) (ctrl.Result, error) {
	r.checkAlertProviders(ctx, canary)
	res, err := r.step(ctx, canary, out)
	var st *stalledError
	if errors.As(err, &st) {
		if markStalled(canary, st.reason, st.err.Error()) {
			r.record(ctx, canary, "Warning", st.reason, st.err.Error())
		}
		return ctrl.Result{RequeueAfter: plan.Interval(canary.Spec)}, nil
	}
	if err != nil {
		// Transient: retried with backoff; the condition tells users what is going on.
		setCondition(canary, sluicev1.ConditionReady, metav1.ConditionFalse, sluicev1.ReasonReconcileError, err.Error())
		return ctrl.Result{}, err
	}
	clearStalled(canary)
	canary.Status.ObservedGeneration = canary.Generation
	return res, nil
}

func (r *Reconciler) step(ctx context.Context, canary *sluicev1.Canary, out *outbox) (ctrl.Result, error) {
	router, ok := r.Routers[providerOf(canary)]
	if !ok {
		return ctrl.Result{}, stalled(sluicev1.ReasonInvalidSpec, "provider %q is not enabled in this controller", providerOf(canary))
	}
	if err := analysis.ValidateIntervals(canary, r.scrapeInterval()); err != nil {
		return ctrl.Result{}, stalled(sluicev1.ReasonInvalidSpec, "%w", err)
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
	if err := r.ensureServices(ctx, canary, target); err != nil {
		return ctrl.Result{}, err
	}
	primary, err := r.ensurePrimary(ctx, canary, target, refs, revision)
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := router.Reconcile(ctx, canary); err != nil {
		if errors.Is(err, providers.ErrRouteNotFound) || errors.Is(err, gatewayapi.ErrRouteConflict) ||
			errors.Is(err, istio.ErrNotControlled) || errors.Is(err, gatewayapi.ErrInvalidSpec) ||
			errors.Is(err, gatewayapi.ErrNoApexBackend) {
			return ctrl.Result{}, stalled(sluicev1.ReasonRouteError, "%w", err)
		}
		return ctrl.Result{}, fmt.Errorf("reconciling routes: %w", err)
	}
	if wait, err := r.metricsReady(ctx, canary); err != nil || wait {
		return ctrl.Result{RequeueAfter: plan.PollInterval}, err
	}

	o := plan.Observed{
		Now: r.now(), Spec: canary.Spec, Status: canary.Status, Revision: revision, TrackedConfigs: tracked,
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
		if stale, err := r.isStale(ctx, canary); err != nil || stale {
			return ctrl.Result{RequeueAfter: staleRetry}, err
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
			return ctrl.Result{}, stalled(sluicev1.ReasonInvalidSpec, "analysis: %w", err)
		}
		o.Check = &plan.Check{Outcome: check.Outcome(), Failed: check.Failed(), Summary: check.Summary(),
			Results: check.Results, WindowStart: check.WindowStart()}
	}

	d := plan.Decide(o)
	if err := r.execute(ctx, canary, router, target, primary, refs, d); err != nil {
		return ctrl.Result{}, err
	}
	canary.Status = d.Status
	out.events = append(out.events, d.Events...)
	setPhaseConditions(canary, o.Hold, d.Events)
	observeMetrics(canary, d.Events)
	queueNotifications(canary, d.Events, out)
	return ctrl.Result{RequeueAfter: d.RequeueAfter}, nil
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
// controllers of one workload would fight over its replicas, primary and route.
func (r *Reconciler) targetConflict(ctx context.Context, canary *sluicev1.Canary) error {
	list := &sluicev1.CanaryList{}
	// Every tick: read the cache's objects without copying them (they are only read here).
	if err := r.List(ctx, list, client.InNamespace(canary.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("listing canaries of deployment %s: %w", canary.Spec.TargetRef.Name, err)
	}
	for i := range list.Items {
		other := &list.Items[i]
		if other.UID == canary.UID || !other.DeletionTimestamp.IsZero() || other.Spec.TargetRef.Name != canary.Spec.TargetRef.Name {
			continue
		}
		older := other.CreationTimestamp.Before(&canary.CreationTimestamp) ||
			(other.CreationTimestamp.Equal(&canary.CreationTimestamp) && other.Name < canary.Name)
		if older {
			return stalled(sluicev1.ReasonTargetConflict, "deployment %s is already the target of canary %s; delete one of them",
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
			return nil, stalled(sluicev1.ReasonTargetNotFound, "target deployment %s not found", key.Name)
		}
		return nil, fmt.Errorf("reading target deployment %s: %w", key.Name, err)
	}
	if _, err := primarySelector(target); err != nil {
		return nil, stalled(sluicev1.ReasonInvalidSpec, "%w", err)
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
			return false, stalled(sluicev1.ReasonInvalidSpec, "analysis: %w", err)
		}
		canary.Status.Phase = sluicev1.CanaryPhaseInitializing
		markWaiting(canary, sluicev1.ReasonMetricsUnreachable, fmt.Sprintf("Waiting for the metrics server: %v", err))
		return true, nil
	}
	return false, nil
}
