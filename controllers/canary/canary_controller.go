package canary

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"sluice.dev/sluice/analysis"
	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/providers"
)

// defaultScrapeInterval is Prometheus' default scrape interval.
const defaultScrapeInterval = 15 * time.Second

// Finalizer holds a deleted Canary until its traffic is safe without it: with revertOnDeletion
// the target serves again through the user's original routing; without it the primary objects are
// orphaned and keep serving.
const Finalizer = "sluice.dev/finalizer"

// Analyzer runs a Canary's analysis; analysis.Engine implements it against Prometheus.
type Analyzer interface {
	// Analyze evaluates every metric once at now. errors: an analysis that cannot run at all;
	// per-metric problems are Error verdicts in the Check.
	Analyze(ctx context.Context, canary *sluicev1.Canary, now time.Time) (analysis.Check, error)
	// Ready reports whether the metrics servers the Canary uses answer. errors: unreachable.
	Ready(ctx context.Context, canary *sluicev1.Canary) error
}

// Options tune the controller.
type Options struct {
	// MaxProgressing caps how many Canaries may run at once; others wait in Waiting. 0: no cap.
	MaxProgressing int
	// ScrapeInterval is Prometheus' scrape interval; metric windows shorter than twice it are
	// refused. Default 15s.
	ScrapeInterval time.Duration
}

// Reconciler drives Canaries through their lifecycle. Every read goes through the manager's cache;
// nothing is written when nothing changed.
type Reconciler struct {
	client.Client
	// APIReader reads around the cache. Before running a check (a side effect that must not run
	// twice) the Canary is re-read through it to make sure the cached copy is current.
	// Default: none (trust the cache).
	APIReader client.Reader
	Scheme    *runtime.Scheme
	Recorder  events.EventRecorder
	// Clock is the only source of time (a fake in tests). Default: the real clock.
	Clock    clock.PassiveClock
	Analyzer Analyzer
	// Notifier delivers notifications (nil: none are sent).
	Notifier Notifier
	// Gates runs webhook calls in the background (nil: webhooks are not called and their gates
	// never pass).
	Gates GateRunner
	// Routers holds the traffic provider for each Provider value.
	Routers map[sluicev1.Provider]providers.Router
	Options

	cap rolloutCap
	// checks remembers each Canary's last check per round (see checkMemo).
	checks checkMemo
	// patchedFrom maps a Canary to the resourceVersion its last status patch was based on.
	patchedFrom sync.Map
}

// +kubebuilder:rbac:groups=sluice.dev,resources=canaries,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=sluice.dev,resources=canaries/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=sluice.dev,resources=canaries/finalizers,verbs=update
// +kubebuilder:rbac:groups=sluice.dev,resources=metrictemplates;alertproviders,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=services;configmaps,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=httproutes,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=networking.istio.io,resources=virtualservices;destinationrules,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete

// Reconcile runs one tick for a Canary: fetch, one deferred status patch, deletion, finalizer,
// suspend, then the lifecycle step.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	canary := &sluicev1.Canary{}
	if err := r.Get(ctx, req.NamespacedName, canary); err != nil {
		if apierrors.IsNotFound(err) {
			canary.Namespace, canary.Name = req.Namespace, req.Name
			forgetMetrics(canary)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if r.cacheBehindOwnWrite(canary) {
		return ctrl.Result{RequeueAfter: staleRetry}, nil
	}
	base := canary.DeepCopy()
	out := &outbox{base: base}
	defer func() {
		err := r.patchStatus(ctx, base, canary)
		if err == nil {
			r.deliver(ctx, canary, out)
		}
		switch {
		case apierrors.IsConflict(err):
			// The cached Canary was stale: drop this tick's status and decide again shortly.
			log.FromContext(ctx).V(1).Info("Status patch conflicted; retrying", "error", err.Error())
			result = ctrl.Result{RequeueAfter: staleRetry}
		case err != nil:
			retErr = errors.Join(retErr, err)
		}
	}()

	if !canary.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, canary)
	}
	if changed, err := r.reconcileFinalizer(ctx, canary); err != nil || changed {
		// The finalizer patch moved the resourceVersion: start the next tick from a fresh read.
		base.ResourceVersion = canary.ResourceVersion
		return ctrl.Result{RequeueAfter: staleRetry}, err
	}
	if canary.Spec.Suspend {
		if markSuspended(canary) {
			r.record(ctx, canary, corev1.EventTypeNormal, sluicev1.ReasonSuspended, "Suspended (spec.suspend): traffic stays as it is")
		}
		return ctrl.Result{}, nil
	}
	if isSuspended(canary) {
		removeCondition(canary, sluicev1.ConditionReconciling)
		r.record(ctx, canary, corev1.EventTypeNormal, "Resumed", "Resumed (spec.suspend cleared)")
	}
	return r.reconcileRun(ctx, canary, out)
}

// reconcileFinalizer adds the finalizer (every Canary has one, so its deletion never leaves traffic
// routed to objects garbage collection removes); it reports whether it changed the Canary.
func (r *Reconciler) reconcileFinalizer(ctx context.Context, canary *sluicev1.Canary) (bool, error) {
	if controllerutil.ContainsFinalizer(canary, Finalizer) {
		return false, nil
	}
	patch := client.MergeFrom(canary.DeepCopy())
	controllerutil.AddFinalizer(canary, Finalizer)
	if err := r.Patch(ctx, canary, patch); err != nil {
		return false, fmt.Errorf("adding finalizer: %w", err)
	}
	return true, nil
}

// patchStatus writes the status when it changed since base, as a merge patch of the status
// subresource guarded by base's resourceVersion; it makes no request otherwise.
// errors: a conflict (the cached Canary was stale), API errors.
func (r *Reconciler) patchStatus(ctx context.Context, base, canary *sluicev1.Canary) error {
	if equality.Semantic.DeepEqual(base.Status, canary.Status) {
		return nil
	}
	patch := client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})
	if err := r.Status().Patch(ctx, canary, patch); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("patching status of canary %s/%s: %w", canary.Namespace, canary.Name, err))
	}
	r.patchedFrom.Store(client.ObjectKeyFromObject(canary), ownWrite{from: base.ResourceVersion, at: r.now()})
	return nil
}

// cacheBehindOwnWrite reports whether the cached Canary is still the version this process last
// patched the status of: the cache has not seen that write yet, and deciding from it would repeat
// the last transition (and fail its patch with a conflict). It costs no request; after a restart
// the memory is empty and the optimistic lock still guards the write.
func (r *Reconciler) cacheBehindOwnWrite(canary *sluicev1.Canary) bool {
	key := client.ObjectKeyFromObject(canary)
	v, ok := r.patchedFrom.Load(key)
	if !ok {
		return false
	}
	w := v.(ownWrite)
	if w.from == canary.ResourceVersion && r.now().Sub(w.at) < ownWriteMemory {
		return true
	}
	// The cache caught up — or, after ownWriteMemory, the write never landed (a lost write):
	// either way, decide from what the cache shows.
	r.patchedFrom.Delete(key)
	return false
}

// ownWrite is the resourceVersion a status patch was based on, and when it was made.
type ownWrite struct {
	from string
	at   time.Time
}

// ownWriteMemory bounds how long a tick waits for the cache to show our own last write.
const ownWriteMemory = 5 * time.Second

// staleRetry is how soon to look again when the cache turned out to lag behind our own writes.
const staleRetry = 250 * time.Millisecond

// isStale reports whether the cached Canary is older than what the apiserver holds.
func (r *Reconciler) isStale(ctx context.Context, canary *sluicev1.Canary) (bool, error) {
	if r.APIReader == nil {
		return false, nil
	}
	live := &sluicev1.Canary{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(canary), live); err != nil {
		return false, fmt.Errorf("reading canary: %w", err)
	}
	return live.ResourceVersion != canary.ResourceVersion, nil
}

func (r *Reconciler) now() time.Time {
	if r.Clock == nil {
		return time.Now()
	}
	return r.Clock.Now()
}

// record emits an event on the Canary and logs it.
func (r *Reconciler) record(ctx context.Context, canary *sluicev1.Canary, eventType, reason, msg string) {
	log.FromContext(ctx).Info(msg, "reason", reason, "type", eventType)
	if r.Recorder != nil {
		r.Recorder.Eventf(canary, nil, eventType, reason, "Reconcile", "%s", msg)
	}
}

func stampNow(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t)
	return &mt
}
