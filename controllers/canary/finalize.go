package canary

import (
	"context"
	"fmt"

	istionetv1 "istio.io/client-go/pkg/apis/networking/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/canary/plan"
	"sluice.dev/sluice/controllers/internal/reconcilekit"
)

// reconcileDelete makes traffic safe before the Canary goes. With revertOnDeletion: scale the target
// back up, wait until it is ready, point the apex Service and the route back at it, remove the
// primary objects. Without it: orphan the primary objects (drop the Canary's owner reference) so
// garbage collection does not delete what serves the traffic. Then release the finalizer.
func (r *Reconciler) reconcileDelete(ctx context.Context, tick *reconcilekit.Tick, canary *sluicev1.Canary) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(canary, Finalizer) {
		forgetMetrics(canary)
		return ctrl.Result{}, nil
	}
	previous := canary.Status.Phase
	entering := previous != sluicev1.CanaryPhaseTerminating
	if entering {
		canary.Status.Phase = sluicev1.CanaryPhaseTerminating
		canary.Status.LastTransitionTime = stampNow(tick.Now())
		tick.Normal(sluicev1.ReasonTerminating, "Deleting: restoring the target before removing the primary")
	}
	if !canary.Spec.RevertOnDeletion {
		if err := r.orphanObjects(ctx, canary); err != nil {
			return ctrl.Result{}, err
		}
		tick.Normal(sluicev1.ReasonTerminating,
			"Deleted without revertOnDeletion: the primary, its Services and routes are left serving as they are (no longer owned by the Canary)")
		canary.Status.Phase = sluicev1.CanaryPhaseTerminated
		forgetMetrics(canary)
		return ctrl.Result{}, r.releaseFinalizer(ctx, canary)
	}
	target := newWorkload(targetKind(canary))
	err := r.Get(ctx, client.ObjectKey{Namespace: canary.Namespace, Name: canary.Spec.TargetRef.Name}, target.obj())
	switch {
	case apierrors.IsNotFound(err):
		tick.Warning(sluicev1.ReasonTargetNotFound, "Target is gone; nothing to restore")
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("reading target: %w", err)
	default:
		if entering {
			if err := r.warnUnpromotedRevert(ctx, tick, canary, target, previous); err != nil {
				return ctrl.Result{}, err
			}
		}
		if wait, err := r.restoreTarget(ctx, canary, target); err != nil || wait {
			return ctrl.Result{RequeueAfter: plan.PollInterval}, err
		}
	}
	if err := r.removePrimaryObjects(ctx, tick, canary); err != nil {
		return ctrl.Result{}, err
	}
	canary.Status.Phase = sluicev1.CanaryPhaseTerminated
	forgetMetrics(canary)
	return ctrl.Result{}, r.releaseFinalizer(ctx, canary)
}

// warnUnpromotedRevert warns, as the revert starts, when the target runs a revision the primary
// does not (a rolled-back run, or an edit no run has analysed yet): revertOnDeletion hands it all
// the traffic. It is what the user asked for (and what Flagger does), so it proceeds, but loudly.
func (r *Reconciler) warnUnpromotedRevert(ctx context.Context, tick *reconcilekit.Tick, canary *sluicev1.Canary, target workload, previous sluicev1.CanaryPhase) error {
	promoted := canary.Status.LastPromotedSpec
	if promoted == "" {
		return nil // never initialized: the primary never served anything else
	}
	tracked, err := r.trackedConfigs(ctx, canary.Namespace, configRefs(&target.podTemplate().Spec))
	if err != nil {
		return fmt.Errorf("reading the target's configs: %w", err)
	}
	state, err := templateStateOf(target)
	if err != nil {
		return err
	}
	revision, err := revisionFromState(state, tracked)
	if err != nil {
		return err
	}
	if revision == promoted {
		return nil
	}
	what := "a revision no run has promoted"
	if revision == canary.Status.LastAppliedSpec && previous == sluicev1.CanaryPhaseFailed {
		what = "the revision its last run rolled back"
	}
	tick.Warning(sluicev1.ReasonRevertToUnpromoted, fmt.Sprintf(
		"revertOnDeletion: %s %s runs %s (%s), not the promoted %s the primary serves: once it is ready, the apex Service and routes send all traffic to it",
		target.kind(), target.obj().GetName(), what, revision, promoted))
	return nil
}

// restoreTarget scales the target to the primary's replicas and, once it is ready, routes the
// apex Service and the route to it. It reports whether to wait for readiness.
func (r *Reconciler) restoreTarget(ctx context.Context, canary *sluicev1.Canary, target workload) (bool, error) {
	replicas := int32(1)
	primary := newWorkload(target.kind())
	if err := r.Get(ctx, client.ObjectKey{Namespace: canary.Namespace, Name: primaryName(target.obj().GetName())}, primary.obj()); err == nil {
		if n := primary.replicas(); n != nil && *n > 0 {
			replicas = *n
		}
	}
	if n := target.replicas(); n != nil && *n == 0 {
		if err := r.scale(ctx, target, replicas); err != nil {
			return false, err
		}
		return true, nil
	}
	if !target.summary("").IsReady(plan.CanaryReadyThreshold(canary.Spec)) {
		reconcilekit.MarkWaiting(canary, sluicev1.ReasonTerminating, fmt.Sprintf("Waiting for %s to become ready before removing the primary", target.obj().GetName()))
		return true, nil
	}
	apex := &corev1.Service{}
	names := canary.ServiceNames()
	// An apex Service Sluice never took over (the Canary stalled before) is left as it is.
	switch err := r.Get(ctx, client.ObjectKey{Namespace: canary.Namespace, Name: names.Apex}, apex); {
	case err == nil && ownedBy(apex, canary):
		patch := client.MergeFrom(apex.DeepCopy())
		if _, err := restoreOriginal(apex, target); err != nil {
			return false, err
		}
		apex.OwnerReferences = withoutOwner(apex.OwnerReferences, canary.UID)
		if err := r.Patch(ctx, apex, patch); err != nil {
			return false, fmt.Errorf("pointing service %s back at %s: %w", names.Apex, target.obj().GetName(), err)
		}
	case client.IgnoreNotFound(err) != nil:
		return false, fmt.Errorf("reading apex service: %w", err)
	}
	if router, ok := r.Routers[providerOf(canary)]; ok {
		if err := router.Finalize(ctx, canary); err != nil {
			return false, fmt.Errorf("restoring routes: %w", err)
		}
	}
	return false, nil
}

func withoutOwner(refs []metav1.OwnerReference, uid types.UID) []metav1.OwnerReference {
	out := refs[:0:0]
	for _, ref := range refs {
		if ref.UID != uid {
			out = append(out, ref)
		}
	}
	return out
}

// removePrimaryObjects deletes the primary Deployment, the -primary and -canary Services and the
// -primary config copies this Canary owns; objects of those names without Sluice's ownership
// label are left alone.
func (r *Reconciler) removePrimaryObjects(ctx context.Context, tick *reconcilekit.Tick, canary *sluicev1.Canary) error {
	names := canary.ServiceNames()
	objs := []client.Object{
		primaryObject(canary),
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: names.Primary, Namespace: canary.Namespace}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: names.Canary, Namespace: canary.Namespace}},
	}
	for _, list := range []client.ObjectList{&corev1.ConfigMapList{}, &corev1.SecretList{}} {
		if err := r.List(ctx, list, client.InNamespace(canary.Namespace), client.MatchingLabels{LabelCanary: canary.Name}); err != nil {
			return fmt.Errorf("listing config copies: %w", err)
		}
		switch l := list.(type) {
		case *corev1.ConfigMapList:
			for i := range l.Items {
				objs = append(objs, &l.Items[i])
			}
		case *corev1.SecretList:
			for i := range l.Items {
				objs = append(objs, &l.Items[i])
			}
		}
	}
	for _, o := range objs {
		left, err := r.deleteOwned(ctx, canary, o)
		if err != nil {
			return err
		}
		if left {
			tick.Warning(sluicev1.ReasonNotOwned, fmt.Sprintf(
				"Left %s alone: Sluice did not create it for canary %s (no label %s=%s)", o.GetName(), canary.Name, LabelCanary, canary.Name))
		}
	}
	return nil
}

// releaseFinalizer removes the finalizer, retrying on conflict with a fresh read.
func (r *Reconciler) releaseFinalizer(ctx context.Context, canary *sluicev1.Canary) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		latest := &sluicev1.Canary{}
		if err := r.Get(ctx, client.ObjectKeyFromObject(canary), latest); err != nil {
			return client.IgnoreNotFound(err)
		}
		patch := client.MergeFromWithOptions(latest.DeepCopy(), client.MergeFromWithOptimisticLock{})
		controllerutil.RemoveFinalizer(latest, Finalizer)
		return client.IgnoreNotFound(r.Patch(ctx, latest, patch))
	})
}

// orphanObjects drops the Canary's owner reference from everything it owns that carries traffic:
// the primary (Deployment or DaemonSet), the apex, primary and canary Services, the -primary config copies and
// generated routes. They keep serving exactly as they are.
func (r *Reconciler) orphanObjects(ctx context.Context, canary *sluicev1.Canary) error {
	var workloads client.ObjectList = &appsv1.DeploymentList{}
	if targetKind(canary) == kindDaemonSet {
		workloads = &appsv1.DaemonSetList{}
	}
	lists := []client.ObjectList{workloads, &corev1.ServiceList{}, &corev1.ConfigMapList{}, &corev1.SecretList{},
		&gwv1.HTTPRouteList{}, &istionetv1.VirtualServiceList{}, &istionetv1.DestinationRuleList{}}
	for _, list := range lists {
		opts := []client.ListOption{client.InNamespace(canary.Namespace)}
		switch list.(type) {
		case *corev1.ConfigMapList, *corev1.SecretList:
			// Listed from the apiserver (their contents are not cached): only Sluice's copies.
			opts = append(opts, client.MatchingLabels{LabelCanary: canary.Name})
		}
		if err := r.List(ctx, list, opts...); err != nil {
			if meta.IsNoMatchError(err) {
				continue // route kind not installed
			}
			return fmt.Errorf("listing objects to orphan: %w", err)
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			return err
		}
		for _, item := range items {
			o, ok := item.(client.Object)
			if !ok || !metav1.IsControlledBy(o, canary) {
				continue
			}
			patch := client.MergeFromWithOptions(o.DeepCopyObject().(client.Object), client.MergeFromWithOptimisticLock{})
			o.SetOwnerReferences(withoutOwner(o.GetOwnerReferences(), canary.UID))
			if err := r.Patch(ctx, o, patch); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("orphaning %s: %w", o.GetName(), err)
			}
		}
	}
	return nil
}

// primaryObject is the primary of the Canary's target kind, by name only.
func primaryObject(canary *sluicev1.Canary) client.Object {
	o := newWorkload(targetKind(canary)).obj()
	o.SetName(primaryName(canary.Spec.TargetRef.Name))
	o.SetNamespace(canary.Namespace)
	return o
}
