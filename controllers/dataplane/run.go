package dataplane

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"sluice.dev/sluice/analysis"
	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/dataplane/waves"
	"sluice.dev/sluice/controllers/internal/reconcilekit"
	"sluice.dev/sluice/controllers/windows"
)

// stalledRetry is how soon a stalled DataPlane is looked at again (changes to it or to the
// namespaces wake it up sooner).
const stalledRetry = time.Minute

// step observes, decides and acts: the checks that can stall the DataPlane first, in order
// (spec, control plane, canary namespaces), then the analysis when due, the decision, its
// actions, and the conditions. Events and notifications go to the outbox.
func (r *Reconciler) step(ctx context.Context, tick *reconcilekit.Tick, dp *sluicev1.DataPlane) (ctrl.Result, error) {
	now := tick.Now()
	if err := r.validate(dp); err != nil {
		return ctrl.Result{}, err
	}
	cp, err := r.observeControlPlane(ctx, dp)
	if err != nil {
		return ctrl.Result{}, err
	}
	fleet, err := r.observe(ctx, dp, cp)
	if err != nil {
		return ctrl.Result{}, err
	}
	if dp.Status.Version != waves.Target(dp.Spec) {
		if err := checkCanaries(dp, fleet); err != nil {
			return ctrl.Result{}, err
		}
	}
	window, err := windows.Evaluate(dp.Spec.Windows, now)
	if err != nil {
		return ctrl.Result{}, reconcilekit.Stalled(sluicev1.ReasonInvalidSpec, "spec.%w", err)
	}
	o := waves.Observed{
		Now: now, Spec: dp.Spec, Status: dp.Status, Namespaces: fleet.namespaces, Skipped: fleet.skipped,
		ControlPlane: waves.ControlPlane{Version: cp.state.Version, Ready: cp.state.Ready, Message: cp.state.Message,
			InjectorAvailable: cp.state.InjectorAvailable, InjectorMessage: cp.state.InjectorMessage},
		Requests: requests(dp), Window: window, PollInterval: r.PollInterval,
	}
	if waves.AnalysisDue(o) {
		if stale, err := tick.Kit().IsStale(ctx, dp); err != nil || stale {
			return reconcilekit.StaleResult(), err
		}
		check, err := r.analyze(ctx, dp, waves.BakingWave(&dp.Status), now)
		if err != nil {
			return ctrl.Result{}, err
		}
		o.Check = check
	}

	d := waves.Decide(o)
	if acts(d) && o.Check == nil {
		if stale, err := tick.Kit().IsStale(ctx, dp); err != nil || stale {
			return reconcilekit.StaleResult(), err
		}
	}
	execErr := r.execute(ctx, dp, &d)
	d.Finish(now)
	dp.Status = d.Status
	tick.Event(d.Events...)
	for _, n := range d.Notifications {
		tick.Notify(r.Notifier, dp.Spec.Analysis.Alerts, notification(dp, n))
	}
	tick.Event(setConditions(dp, &d)...)
	if execErr != nil {
		return ctrl.Result{}, execErr
	}
	return ctrl.Result{RequeueAfter: d.RequeueAfter}, nil
}

// requests returns the values of dp's request annotations.
func requests(dp *sluicev1.DataPlane) map[string]string {
	out := map[string]string{}
	for _, k := range []string{sluicev1.AnnotationApproveFleet, sluicev1.AnnotationAbort, sluicev1.AnnotationRetry} {
		if v := dp.Annotations[k]; v != "" {
			out[k] = v
		}
	}
	return out
}

// acts reports whether d restarts or evicts.
func acts(d waves.Decision) bool {
	for _, a := range d.Actions {
		if a.Type != waves.ActionPin {
			return true
		}
	}
	return false
}

// validate reports spec problems admission cannot catch (or objects written before a rule
// existed): the version field of the mesh, durations, the analysis.
func (r *Reconciler) validate(dp *sluicev1.DataPlane) error {
	spec := dp.Spec
	if waves.Target(spec) == "" {
		return reconcilekit.Stalled(sluicev1.ReasonInvalidSpec, "spec.mesh %q needs its version (spec.version for linkerd, spec.revision for istio)", spec.Mesh)
	}
	if d, err := time.ParseDuration(spec.BakeTime); spec.BakeTime != "" && (err != nil || d < 0) {
		return reconcilekit.Stalled(sluicev1.ReasonInvalidSpec, "spec.bakeTime %q is not a duration", spec.BakeTime)
	}
	if spec.ExcludePods != nil {
		if _, err := metav1.LabelSelectorAsSelector(spec.ExcludePods); err != nil {
			return reconcilekit.Stalled(sluicev1.ReasonInvalidSpec, "spec.excludePods: %w", err)
		}
	}
	if len(spec.Analysis.Metrics) == 0 {
		return nil
	}
	if err := analysis.ValidateNamespaceAnalysis(r.analysisFor(dp, ""), r.ScrapeInterval); err != nil {
		return reconcilekit.Stalled(sluicev1.ReasonInvalidSpec, "spec.analysis: %w", err)
	}
	return nil
}
