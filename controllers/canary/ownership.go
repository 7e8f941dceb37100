package canary

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/internal/reconcilekit"
)

// ownedBy reports whether Sluice created o for canary: o carries the ownership label with the
// Canary's name and no other object controls it (a Canary deleted without revertOnDeletion leaves
// its objects labelled and without controller; a new Canary of that name takes them back).
func ownedBy(o metav1.Object, canary *sluicev1.Canary) bool {
	if o.GetLabels()[LabelCanary] != canary.Name {
		return false
	}
	ref := metav1.GetControllerOf(o)
	return ref == nil || ref.UID == canary.UID
}

// notOwned stalls the Canary on an object of a name Sluice wants that it did not create.
func notOwned(canary *sluicev1.Canary, kind, name string) error {
	return reconcilekit.Stalled(sluicev1.ReasonNotOwned,
		"%s %s exists and was not created by Sluice for canary %s (it lacks label %s=%s): Sluice does not adopt, change or delete it; "+
			"rename or delete it, or label it to hand it over", kind, name, canary.Name, LabelCanary, canary.Name)
}

// claimService decides whether Sluice may manage the existing Service svc: its own, or the apex
// Service, which a Canary takes over by design (its selector then points at the primary pods):
// that is announced in an event. errors: notOwned for a -primary or -canary Service Sluice did
// not create.
func claimService(tick *reconcilekit.Tick, canary *sluicev1.Canary, svc *corev1.Service, apex bool) error {
	if svc.CreationTimestamp.IsZero() || ownedBy(svc, canary) {
		return nil
	}
	if !apex {
		return notOwned(canary, "Service", svc.Name)
	}
	tick.Normal(sluicev1.ReasonServiceAdopted,
		fmt.Sprintf("Taking over Service %s as the apex Service: its selector now points at the primary pods and it is labelled %s=%s",
			svc.Name, LabelCanary, canary.Name))
	return nil
}

// deleteOwned deletes the object obj names if Sluice created it for canary, guarded by its UID so
// a replacement created meanwhile is never deleted; an object Sluice did not create is left
// alone (and logged by the caller's event). It reports whether it left an object alone.
func (r *Reconciler) deleteOwned(ctx context.Context, canary *sluicev1.Canary, obj client.Object) (bool, error) {
	if err := r.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	if !ownedBy(obj, canary) {
		return true, nil
	}
	uid := obj.GetUID()
	if err := r.Delete(ctx, obj, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
		return false, fmt.Errorf("deleting %s: %w", obj.GetName(), err)
	}
	return false, nil
}

// configKind is the Kubernetes kind of a tracked config kind.
func configKind(kind string) string {
	if kind == kindConfigMap {
		return "ConfigMap"
	}
	return "Secret"
}

// checkNameClashes stalls, before Sluice writes anything for a Canary without a primary yet, on
// an object of a name it would create that it did not create: the primary Deployment, the
// -primary and -canary Services, the -primary config copies. Stalling only when creating them
// would come after the apex Service was taken over, pointing it at primary pods that never come.
// Once the primary exists (and is Sluice's), the names are Sluice's: nothing more is read.
// errors: notOwned naming the first clash, API errors.
func (r *Reconciler) checkNameClashes(ctx context.Context, canary *sluicev1.Canary, target workload, refs []configRef) error {
	key := func(name string) client.ObjectKey { return client.ObjectKey{Namespace: canary.Namespace, Name: name} }
	primary := newWorkload(target.kind())
	switch err := r.Get(ctx, key(primaryName(target.obj().GetName())), primary.obj()); {
	case err == nil:
		if !ownedBy(primary.obj(), canary) {
			return notOwned(canary, target.kind(), primary.obj().GetName())
		}
		return nil
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("reading primary %s: %w", strings.ToLower(target.kind()), err)
	}
	names := canary.ServiceNames()
	for _, name := range []string{names.Primary, names.Canary} {
		svc := &corev1.Service{}
		switch err := r.Get(ctx, key(name), svc); {
		case err == nil && !ownedBy(svc, canary):
			return notOwned(canary, "Service", name)
		case client.IgnoreNotFound(err) != nil:
			return fmt.Errorf("reading service %s: %w", name, err)
		}
	}
	for _, ref := range refs {
		var obj client.Object = &corev1.Secret{}
		if ref.Kind == kindConfigMap {
			obj = &corev1.ConfigMap{}
		}
		name := primaryName(ref.Name)
		switch err := r.Get(ctx, key(name), obj); {
		case err == nil && !ownedBy(obj, canary):
			return notOwned(canary, configKind(ref.Kind), name)
		case client.IgnoreNotFound(err) != nil:
			return fmt.Errorf("reading %s %s: %w", configKind(ref.Kind), name, err)
		}
	}
	return nil
}
