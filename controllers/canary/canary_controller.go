package canary

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"sluice.dev/sluice/analysis"
	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/canary/plan"
	"sluice.dev/sluice/controllers/internal/reconcilekit"
	"sluice.dev/sluice/egress"
	"sluice.dev/sluice/providers"
	"sluice.dev/sluice/tenancy"
)

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
	// Refs decides which namespaces templateRefs and providerRefs may name (zero value: the
	// Canary's own only); a refused reference stalls the Canary before anything is read or sent.
	Refs tenancy.RefPolicy
	// Routes decides which hosts, gateways and parents a generated route may name (zero value:
	// the Canary's namespace's only); a refused one stalls the Canary and no route is written for
	// it (routereach.go).
	Routes tenancy.RoutePolicy
	// Egress refuses webhook URLs and metricsServer addresses up front (nil: the default policy,
	// egress.Options{}); the clients of webhooks, notify and analysis enforce it too.
	Egress *egress.Policy
	// StepEvents posts a Kubernetes event for every weight step and the start of the promotion
	// (economy.go). Default: those are in the status, the log, the metrics and the event webhooks
	// only.
	StepEvents bool
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
	// Notifier delivers notifications; notify.Notifier implements it (nil: none are sent).
	Notifier reconcilekit.Notifier
	// Gates runs webhook calls in the background (nil: webhooks are not called and their gates
	// never pass).
	Gates GateRunner
	// Routers holds the traffic provider for each Provider value.
	Routers map[sluicev1.Provider]providers.Router
	// FreshRouters, when set, are the same providers reading around the cache. A route read
	// through Routers that differs from what the status says is read again through them before it
	// counts as drift: the cache lagging behind Sluice's own route write is no outside edit.
	FreshRouters map[sluicev1.Provider]providers.Router
	// RouterClient is the client Routers write through (providers.ReadOwnWrites): the route
	// watches skip the echo of those writes (the route as our own write left it tells its Canary
	// nothing new). Nil: every route event wakes its Canary.
	RouterClient client.Client
	Options

	cap rolloutCap
	// writes remembers this controller's own status writes (the stale-cache guard).
	writes reconcilekit.WriteLog
	// workloadWrites remembers its writes of targets and primaries (scale, promotion, restore):
	// the same guard for the workloads a tick reads (observe).
	workloadWrites reconcilekit.WriteLog
	// deliveries sends notifications in the background (never in a worker).
	deliveries reconcilekit.Deliveries
	// checks remembers each Canary's last check per round (see checkMemo).
	checks checkMemo
}

// Least privilege: Sluice writes with create, patch (merge and server-side apply) and delete, never
// update (but its leader-election Lease); update on canaries/finalizers is what the apiserver asks
// of whoever sets an owner reference that blocks the Canary's deletion (the generated objects').
// Secrets and ConfigMaps are listed and watched as metadata only (the verbs cannot say so).
// +kubebuilder:rbac:groups=sluice.dev,resources=canaries,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=sluice.dev,resources=canaries/status,verbs=patch
// +kubebuilder:rbac:groups=sluice.dev,resources=canaries/finalizers,verbs=update
// +kubebuilder:rbac:groups=sluice.dev,resources=metrictemplates;alertproviders,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=deployments;daemonsets,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=services;configmaps,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=httproutes,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=networking.istio.io,resources=virtualservices;destinationrules,verbs=get;list;watch;create;patch;delete
// Leader election (client-go's LeaseLock) reads, creates and renews its Lease: get, create, update.
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update

// Reconcile runs one tick for a Canary: fetch, one deferred status patch (then the outbox),
// deletion, finalizer, suspend, then the lifecycle step.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	canary := &sluicev1.Canary{}
	if err := r.Get(ctx, req.NamespacedName, canary); err != nil {
		if apierrors.IsNotFound(err) {
			canary.Namespace, canary.Name = req.Namespace, req.Name
			forgetMetrics(canary)
			r.writes.Forget(canary)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	tick, ok := r.kit().Begin(canary)
	if !ok {
		return reconcilekit.StaleResult(), nil
	}
	defer func() {
		result, retErr = tick.End(ctx, result, retErr)
		// requeue.go: idle is free; priority.go: under load, the checks of live canaries go first.
		result = nextLook(canary, result, retErr)
		result.Priority = new(nextLookPriority(canary))
	}()

	if !canary.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, tick, canary)
	}
	if changed, err := r.reconcileFinalizer(ctx, canary); err != nil || changed {
		// The finalizer patch moved the resourceVersion: start the next tick from a fresh read.
		tick.Rebase()
		return reconcilekit.StaleResult(), err
	}
	if canary.Spec.Suspend {
		r.releaseSlot(canary) // a paused run does not keep a slot of the cap (capline.go)
	}
	if plan.PausedWithTraffic(canary.Spec, canary.Status) {
		// Traffic is on the canary: the pause holds only the advance (observe turns it into a
		// deliberate hold); the checks go on.
		if !reconcilekit.IsSuspended(canary) {
			tick.Normal(sluicev1.ReasonSuspended, fmt.Sprintf("Paused (spec.suspend) at canary weight %d: the advance holds; checks keep running and a failing canary still rolls back",
				canary.Status.CanaryWeight))
		}
		return r.reconcileRun(ctx, tick, canary)
	}
	if canary.Spec.Suspend {
		if reconcilekit.MarkSuspended(canary, "Reconciliation is suspended (spec.suspend)") {
			tick.Normal(sluicev1.ReasonSuspended, "Suspended (spec.suspend): traffic stays as it is")
		}
		return ctrl.Result{}, nil
	}
	if reconcilekit.Resume(canary) {
		tick.Normal(sluicev1.ReasonResumed, "Resumed (spec.suspend cleared)")
	}
	return r.reconcileRun(ctx, tick, canary)
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

// kit is the shared reconcile scaffolding over this Reconciler's client, recorder and clock.
func (r *Reconciler) kit() reconcilekit.Kit {
	return reconcilekit.Kit{Client: r.Client, APIReader: r.APIReader, Recorder: r.eventRecorder(), Clock: r.Clock, Writes: &r.writes, Deliveries: &r.deliveries}
}

func stampNow(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t)
	return &mt
}
