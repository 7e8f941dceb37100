package dataplane

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"sluice.dev/sluice/analysis"
	sluicev1 "sluice.dev/sluice/api/v1alpha1"
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
// nothing changed.
type Reconciler struct {
	client.Client
	// APIReader reads around the cache: before a tick restarts, evicts or runs a check, the
	// DataPlane is re-read through it to make sure the cached copy is current. Optional.
	APIReader client.Reader
	Recorder  events.EventRecorder
	// Clock is the only source of time (a fake in tests). Default: the real clock.
	Clock    clock.PassiveClock
	Analyzer Analyzer
	// Notifier delivers notifications. Default NopNotifier.
	Notifier Notifier
	// Pods lists pods. Default: the cache.
	Pods PodLister
	// Evictor evicts pods. Default: the Eviction API through the client.
	Evictor Evictor
	Options

	// patchedFrom maps each DataPlane to the resourceVersion its last status patch started from,
	// so a tick on a cache that has not seen that write yet is skipped (see cacheBehindOwnWrite).
	patchedFrom sync.Map
}

// +kubebuilder:rbac:groups=sluice.dev,resources=dataplanes,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=sluice.dev,resources=dataplanes/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=sluice.dev,resources=dataplanes/finalizers,verbs=update
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

// Reconcile runs one tick for a DataPlane: fetch, one deferred status patch that delivers the
// tick's outbox (events, notifications) only once it succeeded, deletion, finalizer, another
// DataPlane for the same mesh, suspend, then the data-plane step.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	dp := &sluicev1.DataPlane{}
	if err := r.Get(ctx, req.NamespacedName, dp); err != nil {
		if apierrors.IsNotFound(err) {
			forgetMetrics(req.Name)
			r.patchedFrom.Delete(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if r.cacheBehindOwnWrite(dp) {
		return ctrl.Result{RequeueAfter: staleRetry}, nil
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
		return ctrl.Result{RequeueAfter: staleRetry}, nil
	}

	base := dp.DeepCopy()
	out := &outbox{}
	defer func() {
		err := r.patchStatus(ctx, base, dp)
		switch {
		case apierrors.IsConflict(err):
			// The cached DataPlane was stale: drop this tick's status and its outbox, decide again.
			log.FromContext(ctx).V(1).Info("Status patch conflicted; retrying", "error", err.Error())
			result, retErr = ctrl.Result{RequeueAfter: staleRetry}, nil
		case err != nil:
			retErr = errors.Join(retErr, err)
		default:
			r.deliver(ctx, dp, out)
			observeMetrics(dp)
		}
	}()

	if first, err := r.firstOfMesh(ctx, dp); err != nil {
		return ctrl.Result{}, err
	} else if first != "" {
		msg := fmt.Sprintf("DataPlane %s already declares the %s data plane: one DataPlane per mesh; delete this one or that one", first, dp.Spec.Mesh)
		if markStalled(dp, sluicev1.ReasonDuplicateDataPlane, msg) {
			out.warning(sluicev1.ReasonDuplicateDataPlane, msg)
		}
		return ctrl.Result{RequeueAfter: stalledRetry}, nil
	}
	if dp.Spec.Suspend {
		if markSuspended(dp) {
			out.normal(sluicev1.ReasonSuspended, "Suspended (spec.suspend): no wave starts, no pod restarts")
		}
		return ctrl.Result{}, nil
	}
	return r.reconcileRun(ctx, dp, out)
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

// patchStatus writes the status when it changed since base, as a merge patch of the status
// subresource guarded by base's resourceVersion; it makes no request otherwise.
// errors: a conflict (the cached DataPlane was stale), API errors.
func (r *Reconciler) patchStatus(ctx context.Context, base, dp *sluicev1.DataPlane) error {
	if equality.Semantic.DeepEqual(base.Status, dp.Status) {
		return nil
	}
	patch := client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})
	if err := r.Status().Patch(ctx, dp, patch); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("patching status of dataplane %s: %w", dp.Name, err))
	}
	r.patchedFrom.Store(client.ObjectKeyFromObject(dp), base.ResourceVersion)
	return nil
}

// cacheBehindOwnWrite reports whether the cached DataPlane is still the version this process last
// patched the status of: deciding from it would repeat the last transition. It costs no request.
func (r *Reconciler) cacheBehindOwnWrite(dp *sluicev1.DataPlane) bool {
	key := client.ObjectKeyFromObject(dp)
	rv, ok := r.patchedFrom.Load(key)
	if !ok {
		return false
	}
	if rv == dp.ResourceVersion {
		return true
	}
	r.patchedFrom.Delete(key)
	return false
}

// staleRetry is how soon to look again when the cache turned out to lag behind our own writes.
const staleRetry = 250 * time.Millisecond

// isStale reports whether the cached DataPlane is older than what the apiserver holds.
func (r *Reconciler) isStale(ctx context.Context, dp *sluicev1.DataPlane) (bool, error) {
	if r.APIReader == nil {
		return false, nil
	}
	live := &sluicev1.DataPlane{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(dp), live); err != nil {
		return false, fmt.Errorf("reading dataplane: %w", err)
	}
	return live.ResourceVersion != dp.ResourceVersion, nil
}

func (r *Reconciler) now() time.Time {
	if r.Clock == nil {
		return time.Now()
	}
	return r.Clock.Now()
}

// record emits an event on the DataPlane and logs it.
func (r *Reconciler) record(ctx context.Context, dp *sluicev1.DataPlane, eventType, reason, msg string) {
	log.FromContext(ctx).Info(msg, "reason", reason, "type", eventType)
	if r.Recorder != nil {
		r.Recorder.Eventf(dp, nil, eventType, reason, "Reconcile", "%s", msg)
	}
}
