package dataplane

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"sluice.dev/sluice/analysis"
	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/internal/planevent"
	"sluice.dev/sluice/controllers/internal/reconcilekit"
)

// Analyzer runs the analysis of one namespace; analysis.Engine implements it against Prometheus.
type Analyzer interface {
	// AnalyzeNamespace evaluates every metric once at now. errors: an analysis that cannot run at
	// all (invalid spec); per-metric problems are Error verdicts in the Check.
	AnalyzeNamespace(ctx context.Context, a analysis.NamespaceAnalysis, now time.Time) (analysis.Check, error)
}

// PodLister lists the pods of a namespace. The default reads the manager's cache; the scale test
// plugs in simulated pods.
type PodLister interface {
	ListPods(ctx context.Context, namespace string) ([]corev1.Pod, error)
}

// Evictor evicts one pod through the Eviction API; mesh.Evict by default.
// errors: mesh.ErrEvictionBlocked when a PodDisruptionBudget refuses, API errors.
type Evictor interface {
	Evict(ctx context.Context, pod *corev1.Pod) error
}

// Options tune the controller.
type Options struct {
	// PollInterval is how soon to look again while pods restart. Default 2s.
	PollInterval time.Duration
	// ScrapeInterval is Prometheus' scrape interval; metric windows shorter than twice it are
	// refused. Default 15s.
	ScrapeInterval time.Duration
	// EventDelay batches the pod, workload and namespace events that wake a DataPlane up: one
	// reconcile per delay at most. Default 250ms.
	EventDelay time.Duration
}

// Reconciler drives DataPlanes. Reads go through the manager's cache; nothing is written when
// nothing changed. Its reconcile loop is the shared one (controllers/internal/reconcilekit): one
// status patch per tick, and the tick's events and notifications delivered only once it
// succeeded.
type Reconciler struct {
	client.Client
	// APIReader reads around the cache: before a tick restarts, evicts or runs a check, the
	// DataPlane is re-read through it to make sure the cached copy is current. Optional.
	APIReader client.Reader
	Recorder  events.EventRecorder
	// Clock is the only source of time (a fake in tests). Default: the real clock.
	Clock    clock.PassiveClock
	Analyzer Analyzer
	// Notifier delivers notifications to the AlertProviders of spec.analysis.alerts
	// (notify.Notifier). Optional: without one, notifications are dropped.
	Notifier reconcilekit.Notifier
	// Pods lists pods. Default: the cache.
	Pods PodLister
	// Evictor evicts pods. Default: the Eviction API through the client.
	Evictor Evictor
	Options

	writes reconcilekit.WriteLog
	// podWatch starts the pod watch with the first DataPlane (setup.go).
	podWatch podWatch
	// deliveries sends notifications in the background (never in a worker).
	deliveries reconcilekit.Deliveries
}

// +kubebuilder:rbac:groups=sluice.dev,resources=dataplanes,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=sluice.dev,resources=dataplanes/status,verbs=patch
// +kubebuilder:rbac:groups=sluice.dev,resources=metrictemplates;alertproviders,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods/eviction,verbs=create
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets;daemonsets,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations,verbs=get;list;watch
// +kubebuilder:rbac:groups=argoproj.io,resources=rollouts,verbs=get;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

func (r *Reconciler) kit() reconcilekit.Kit {
	return reconcilekit.Kit{Client: r.Client, APIReader: r.APIReader, Recorder: r.Recorder, Clock: r.Clock, Writes: &r.writes, Deliveries: &r.deliveries}
}

// Reconcile runs one tick for a DataPlane, in a fixed order: fetch, deletion (the finalizer
// leaves every namespace coherent), finalizer, then one tick whose status patch delivers its
// outbox: another DataPlane declaring the same mesh, suspend, the alert providers, the
// data-plane step.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	dp := &sluicev1.DataPlane{}
	if err := r.Get(ctx, req.NamespacedName, dp); err != nil {
		if apierrors.IsNotFound(err) {
			forgetMetrics(req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if err := r.podWatch.ensure(); err != nil {
		return ctrl.Result{}, err
	}
	if !dp.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.finalize(ctx, dp)
	}
	if !controllerutil.ContainsFinalizer(dp, sluicev1.FinalizerDataPlane) {
		patch := client.MergeFrom(dp.DeepCopy())
		controllerutil.AddFinalizer(dp, sluicev1.FinalizerDataPlane)
		if err := r.Patch(ctx, dp, patch); err != nil {
			return ctrl.Result{}, fmt.Errorf("adding finalizer: %w", err)
		}
		return reconcilekit.StaleResult(), nil
	}
	tick, ok := r.kit().Begin(dp)
	if !ok {
		return reconcilekit.StaleResult(), nil
	}
	defer func() { result, retErr = tick.End(ctx, result, retErr) }()
	tick.Defer(func(context.Context) { observeMetrics(dp) })

	if dp.Spec.Suspend {
		if reconcilekit.MarkSuspended(dp, "Reconciliation is suspended (spec.suspend): no wave starts, no pod restarts") {
			tick.Normal(sluicev1.ReasonSuspended, "Suspended (spec.suspend): no wave starts, no pod restarts")
		}
		return ctrl.Result{}, nil
	}
	if reconcilekit.Resume(dp) {
		tick.Normal(sluicev1.ReasonResumed, "Resumed (spec.suspend cleared)")
	}
	res, err := r.reconcileRun(ctx, tick, dp)
	return tick.Settle(res, err, stalledRetry)
}

// reconcileRun refuses a second DataPlane for the same mesh, checks the alert providers, and runs
// the data-plane step.
func (r *Reconciler) reconcileRun(ctx context.Context, tick *reconcilekit.Tick, dp *sluicev1.DataPlane) (ctrl.Result, error) {
	first, err := r.firstOfMesh(ctx, dp)
	if err != nil {
		return ctrl.Result{}, err
	}
	if first != "" {
		return ctrl.Result{}, reconcilekit.Stalled(sluicev1.ReasonDuplicateDataPlane,
			"DataPlane %s already declares the %s data plane: one DataPlane per mesh; delete this one or that one", first, dp.Spec.Mesh)
	}
	tick.CheckAlerts(ctx, r.Notifier, "", dp.Spec.Analysis.Alerts)
	return r.step(ctx, tick, dp)
}

// firstOfMesh returns the name of the DataPlane that declares dp's mesh when it is not dp: the
// oldest one (then the first by name). "" when dp is the one.
func (r *Reconciler) firstOfMesh(ctx context.Context, dp *sluicev1.DataPlane) (string, error) {
	var list sluicev1.DataPlaneList
	if err := r.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return "", fmt.Errorf("listing dataplanes: %w", err)
	}
	first := dp
	for i := range list.Items {
		o := &list.Items[i]
		if o.Spec.Mesh != dp.Spec.Mesh || !o.DeletionTimestamp.IsZero() {
			continue
		}
		if o.CreationTimestamp.Before(&first.CreationTimestamp) ||
			(o.CreationTimestamp.Equal(&first.CreationTimestamp) && o.Name < first.Name) {
			first = o
		}
	}
	if first.Name == dp.Name {
		return "", nil
	}
	return first.Name, nil
}

// record emits an event on the DataPlane and logs it, at once: only for what happens outside a
// tick (deletion, where no status is written).
func (r *Reconciler) record(ctx context.Context, dp *sluicev1.DataPlane, e planevent.Event) {
	r.kit().Record(ctx, dp, e)
}
