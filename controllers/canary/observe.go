package canary

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"sluice.dev/sluice/analysis"
	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/canary/plan"
	"sluice.dev/sluice/controllers/internal/reconcilekit"
	"sluice.dev/sluice/providers"
)

// observation is what one tick saw: the objects it acts on and the planner's input.
type observation struct {
	target, primary workload // target is nil when it is gone during a run
	// targetTemplate is the hash state of the target's pod template as observed (templateStateOf):
	// a promotion copies that template and no other.
	targetTemplate string
	refs           []configRef
	o              plan.Observed
	// analysisBroken: the analysis cannot run as specified (the stall says why).
	analysisBroken bool
}

// stallOf returns the stalled error in err as a planner stall, or nil.
func stallOf(err error) *plan.Hold {
	if st, ok := reconcilekit.AsStalled(err); ok {
		return &plan.Hold{Reason: st.Reason, Message: st.Err.Error()}
	}
	return nil
}

// errWorkloadCacheBehind ends a tick whose cache still shows the target or the primary as it was
// before our own last write of it (a scale, the promotion): deciding from that version would
// repeat the write. The tick looks again shortly (reconcilekit.StaleResult).
var errWorkloadCacheBehind = errors.New("the cache has not shown our last write of the target or primary yet")

// observe reads the target, its revision, the primary, the Services and the route. A problem only
// a change to the spec or the cluster fixes stops the tick before a run starts; during a run it
// becomes the planner's Stall, so the run keeps its checks and ends at the progress deadline
// instead of leaving traffic on the canary unbounded.
func (r *Reconciler) observe(ctx context.Context, tick *reconcilekit.Tick, canary *sluicev1.Canary, router providers.Router) (*observation, error) {
	s := canary.Status
	inFlight := runningPhases[s.Phase]
	obs := &observation{}
	var stall *plan.Hold
	soft := func(err error) error {
		if st := stallOf(err); st != nil && inFlight {
			if stall == nil {
				stall = st
			}
			return nil
		}
		return err
	}
	if err := analysis.ValidateIntervals(canary, r.scrapeInterval()); err != nil {
		obs.analysisBroken = true
		if err := soft(reconcilekit.Stalled(sluicev1.ReasonInvalidSpec, "%w", err)); err != nil {
			return nil, err
		}
	}
	if err := plan.ValidateStrategy(canary.Spec); err != nil {
		if err := soft(reconcilekit.Stalled(sluicev1.ReasonInvalidSpec, "%w", err)); err != nil {
			return nil, err
		}
	}
	if err := r.validateQueries(ctx, canary); err != nil {
		if _, ok := reconcilekit.AsStalled(err); ok {
			obs.analysisBroken = true
		}
		if err := soft(err); err != nil {
			return nil, err
		}
	}
	target, err := r.target(ctx, canary)
	if err := soft(err); err != nil {
		return nil, err
	}
	revision, tracked := s.LastAppliedSpec, s.TrackedConfigs
	if target != nil {
		obs.refs = configRefs(&target.podTemplate().Spec)
		if obs.targetTemplate, err = templateStateOf(target); err != nil {
			return nil, err
		}
		t, err := r.trackedConfigs(ctx, canary.Namespace, obs.refs)
		if err := soft(err); err != nil {
			return nil, err
		}
		if t != nil {
			rev, err := revisionFromState(obs.targetTemplate, t)
			if err != nil {
				return nil, err
			}
			tracked, revision = t, rev
		}
	}
	if target != nil {
		// Before any write for a Canary without a primary yet: a name Sluice would create that
		// it did not create stalls here, so the apex Service is never taken over for nothing.
		if err := r.checkNameClashes(ctx, canary, target, obs.refs); err != nil {
			return nil, err
		}
	}
	primary, created, err := r.primary(ctx, tick, canary, target, obs.refs, revision)
	if err != nil {
		return nil, err
	}
	// Nothing above writes a workload the log may hold (a primary is created only when missing,
	// from a template Sluice's target writes never change): one look covers both.
	if r.workloadWrites.Behind(primary.obj(), tick.Now()) || target != nil && r.workloadWrites.Behind(target.obj(), tick.Now()) {
		return nil, errWorkloadCacheBehind
	}
	// The copies agree with the revision the primary runs, even after a crash between writes.
	if err := soft(r.settleConfigs(ctx, canary, primary)); err != nil {
		return nil, err
	}
	if err := soft(r.ensureAutoscalers(ctx, canary, primary)); err != nil {
		return nil, err
	}
	primaryReady := primary.summary("").IsReady(plan.PrimaryReadyThreshold(canary.Spec))
	if target != nil {
		if err := r.ensureServices(ctx, tick, canary, target, primaryReady); err != nil {
			return nil, err
		}
	}
	// Nothing moves to the primary before it serves: the route (generated, or the user's routeRef)
	// is reconciled once the primary is ready.
	if primaryReady || (s.Phase != "" && s.Phase != sluicev1.CanaryPhaseInitializing) {
		if err := router.Reconcile(ctx, canary); err != nil {
			if providerOf(canary) == sluicev1.ProviderKubernetes && errors.Is(err, providers.ErrRouteNotFound) {
				// Provider kubernetes routes with the Services ensureServices just wrote: one not
				// read back yet is the cache catching up, not a missing route to stall on.
				return nil, fmt.Errorf("reading back the Services Sluice wrote (the cache catches up): %v", err)
			}
			reason, permanent := providers.IsPermanent(err)
			if !permanent {
				return nil, fmt.Errorf("reconciling routes: %w", err)
			}
			if err := soft(reconcilekit.Stalled(reason, "%w", err)); err != nil {
				return nil, err
			}
		}
	}
	metricsWait, err := r.metricsReady(ctx, canary)
	if err != nil {
		return nil, err
	}
	obs.target, obs.primary = target, primary
	o := plan.Observed{
		Now: tick.Now(), Spec: canary.Spec, Status: canary.Status, Revision: revision, TrackedConfigs: tracked,
		Primary:        primary.summary(primary.obj().GetAnnotations()[AnnotationRevision]),
		PrimaryCreated: created, MetricsWait: metricsWait,
		PrimaryWaitingOn: r.primaryWaitingOn(ctx, tick.Now(), canary, primary, primaryReady),
		Requests: map[string]string{
			sluicev1.AnnotationPromote: canary.Annotations[sluicev1.AnnotationPromote],
			sluicev1.AnnotationAbort:   canary.Annotations[sluicev1.AnnotationAbort],
			sluicev1.AnnotationRetry:   canary.Annotations[sluicev1.AnnotationRetry],
		},
	}
	if target != nil {
		o.Canary = target.summary(revision)
	}
	readRoute(ctx, router, canary, &o)
	if fresh, ok := r.FreshRouters[providerOf(canary)]; ok && routeDiffers(o) {
		readRoute(ctx, fresh, canary, &o) // drift, or the cache behind our own write: ask the apiserver
	}
	hold, windowStall, rejoined, err := r.hold(ctx, canary, o)
	if err != nil {
		return nil, err
	}
	if rejoined {
		o.Status.SlotReleased = false // resumed after a pause, the run has its slot again (capline.go)
	}
	if stall == nil {
		stall = windowStall
	}
	if plan.PausedWithTraffic(canary.Spec, canary.Status) {
		hold = &plan.Hold{Reason: sluicev1.ReasonSuspended, Deliberate: true, Message: fmt.Sprintf(
			"paused (spec.suspend) at canary weight %d: the advance holds; checks keep running every interval and a failing canary still rolls back; the progress deadline waits until resumed",
			canary.Status.CanaryWeight)}
	}
	if stall == nil {
		stall = plan.PrimaryUnready(o)
	}
	o.Hold, o.Stall = hold, stall
	obs.o = o
	return obs, nil
}

// primary returns the primary (of the target's kind): ensured from the target, or read as it is
// when the target is gone.
func (r *Reconciler) primary(ctx context.Context, tick *reconcilekit.Tick, canary *sluicev1.Canary, target workload,
	refs []configRef, revision string) (workload, bool, error) {
	if target != nil {
		return r.ensurePrimary(ctx, tick, canary, target, refs, revision)
	}
	kind := targetKind(canary)
	primary := newWorkload(kind)
	key := client.ObjectKey{Namespace: canary.Namespace, Name: primaryName(canary.Spec.TargetRef.Name)}
	if err := r.Get(ctx, key, primary.obj()); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, false, reconcilekit.Stalled(sluicev1.ReasonPrimaryMissing, "primary %s %s and target %s are both missing",
				strings.ToLower(kind), key.Name, canary.Spec.TargetRef.Name)
		}
		return nil, false, fmt.Errorf("reading primary %s: %w", strings.ToLower(kind), err)
	}
	return primary, false, nil
}

// readRoute reads the route's weights, A/B routing, mirroring and session affinity into o.
func readRoute(ctx context.Context, router providers.Router, canary *sluicev1.Canary, o *plan.Observed) {
	o.RouteKnown, o.RouteABKnown, o.RouteExtrasKnown = false, false, false
	w, err := router.GetRoutes(ctx, canary)
	if err != nil {
		if s := canary.Status; s.Phase != "" && s.Phase != sluicev1.CanaryPhaseInitializing {
			log.FromContext(ctx).Info("Reading route weights failed", "error", err.Error())
		}
		return
	}
	o.RouteWeight, o.RouteKnown = w.Canary, true
	if on, err := router.GetABRoutes(ctx, canary); err == nil {
		o.RouteABOn, o.RouteABKnown = on, true
	}
	observeExtras(ctx, router, canary, o)
}

// routeDiffers reports whether the route as read differs from what the status asks of it.
func routeDiffers(o plan.Observed) bool {
	if o.RouteKnown && o.RouteWeight != o.Status.CanaryWeight {
		return true
	}
	return o.RouteExtrasKnown && (o.RouteMirror != plan.MirrorWanted(o.Spec, o.Status) || o.RouteCookie != plan.AffinityCookie(o.Spec, o.Status))
}
