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

	"sluice.dev/sluice/analysis"
	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/canary/plan"
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

// reconcileRun observes the target, primary and route, gathers gates and analysis, asks the plan
// what to do, and does it: observe → gather → decide → apply.
func (r *Reconciler) reconcileRun(ctx context.Context, canary *sluicev1.Canary, out *outbox) (ctrl.Result, error) {
	r.checkAlertProviders(ctx, canary)
	res, stall, err := r.step(ctx, canary, out)
	var st *stalledError
	if errors.As(err, &st) {
		stall, err = &plan.Hold{Reason: st.reason, Message: st.err.Error()}, nil
		res = ctrl.Result{RequeueAfter: plan.Interval(canary.Spec)}
	}
	if err != nil {
		// Transient: retried with backoff; the condition tells users what is going on.
		setCondition(canary, sluicev1.ConditionReady, metav1.ConditionFalse, sluicev1.ReasonReconcileError, err.Error())
		return ctrl.Result{}, err
	}
	if stall != nil {
		if markStalled(canary, stall.Reason, stall.Message) {
			r.record(ctx, canary, "Warning", stall.Reason, stall.Message)
		}
		if res.RequeueAfter <= 0 || res.RequeueAfter > plan.Interval(canary.Spec) {
			res.RequeueAfter = plan.Interval(canary.Spec)
		}
		return res, nil
	}
	clearStalled(canary)
	canary.Status.ObservedGeneration = canary.Generation
	return res, nil
}

// step runs one tick and returns the stall the planner saw, if any (reported as Stalled).
func (r *Reconciler) step(ctx context.Context, canary *sluicev1.Canary, out *outbox) (ctrl.Result, *plan.Hold, error) {
	router, ok := r.Routers[providerOf(canary)]
	if !ok {
		return ctrl.Result{}, nil, stalled(sluicev1.ReasonInvalidSpec, "provider %q is not enabled in this controller", providerOf(canary))
	}
	if err := r.targetConflict(ctx, canary); err != nil {
		return ctrl.Result{}, nil, err
	}
	obs, err := r.observe(ctx, canary, router)
	if err != nil || obs.wait {
		return ctrl.Result{RequeueAfter: plan.PollInterval}, nil, err
	}
	if res, done, err := r.gather(ctx, canary, obs); done || err != nil {
		return res, obs.o.Stall, err
	}
	d := plan.Decide(obs.o)
	if err := r.apply(ctx, canary, router, obs, d, out); err != nil {
		return ctrl.Result{}, obs.o.Stall, err
	}
	return ctrl.Result{RequeueAfter: d.RequeueAfter}, obs.o.Stall, nil
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
