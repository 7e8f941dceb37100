package reconcilekit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/internal/planevent"
)

// Tick is one reconcile of one object: the status as read at Begin, the object being changed,
// and the outbox of what to deliver once the new status is written.
type Tick struct {
	kit       Kit
	obj, base Object
	events    []planevent.Event
	deferred  []func(context.Context)
}

// Kit returns the kit the tick was begun with.
func (t *Tick) Kit() Kit { return t.kit }

// Now is the time of the tick (Kit.Now).
func (t *Tick) Now() time.Time { return t.kit.Now() }

// Event queues Kubernetes events, recorded in order after the status patch succeeded.
func (t *Tick) Event(events ...planevent.Event) { t.events = append(t.events, events...) }

// Normal queues an event of type Normal.
func (t *Tick) Normal(reason, msg string) { t.Event(planevent.Normal(reason, msg)) }

// Warning queues an event of type Warning.
func (t *Tick) Warning(reason, msg string) { t.Event(planevent.Warning(reason, msg)) }

// Defer queues a side effect (a notification, a fire-and-forget webhook) to run, in order, after
// the status patch succeeded and the events were recorded. It runs at most once per transition
// as long as the status written records that the transition happened.
func (t *Tick) Defer(f func(ctx context.Context)) { t.deferred = append(t.deferred, f) }

// Rebase moves the optimistic lock to obj's current resourceVersion, after the tick itself wrote
// obj's metadata (a finalizer) and got the new version back.
func (t *Tick) Rebase() { t.base.SetResourceVersion(t.obj.GetResourceVersion()) }

// End writes the status when it changed since Begin, as a merge patch of the status subresource
// guarded by the resourceVersion read at Begin, and, once that succeeded (or nothing needed
// writing, or the object is gone), delivers the outbox: the events in order, then the deferred
// side effects in order. A conflict means the cache was stale: the tick is discarded whole (its
// status, outbox and error) and the object is looked at again after StaleRetry. Other patch
// errors are joined to err. Call it deferred:
//
//	defer func() { result, retErr = tick.End(ctx, result, retErr) }()
func (t *Tick) End(ctx context.Context, result ctrl.Result, err error) (ctrl.Result, error) {
	perr := t.patchStatus(ctx)
	switch {
	case apierrors.IsConflict(perr):
		log.FromContext(ctx).V(1).Info("Status patch conflicted; retrying", "error", perr.Error())
		return StaleResult(), nil
	case perr != nil:
		return result, errors.Join(err, perr)
	}
	for _, e := range t.events {
		t.kit.Record(ctx, t.obj, e)
	}
	for _, f := range t.deferred {
		f(ctx)
	}
	return result, err
}

// Commit writes the status now, before the tick's other writes, and makes it the base of the
// deferred patch of End (which then writes only what changed since). A planner uses it for
// decisions whose status must land first — moving traffic back: if a later write is lost, the
// next tick repairs it from the status. The outbox is still delivered by End. errors: those of
// the patch (a conflict: nothing of the decision happened).
func (t *Tick) Commit(ctx context.Context) error {
	if equality.Semantic.DeepEqual(t.base.GetStatus(), t.obj.GetStatus()) {
		return nil
	}
	if err := t.patchStatus(ctx); err != nil {
		return err
	}
	if t.obj.GetResourceVersion() == t.base.GetResourceVersion() {
		// A write that landed always comes back with a new resourceVersion: this one did not, so
		// nothing after it may act as if it had.
		return fmt.Errorf("status of %s not written: the patch came back without a new resourceVersion", client.ObjectKeyFromObject(t.obj))
	}
	base, ok := t.obj.DeepCopyObject().(Object)
	if !ok {
		return fmt.Errorf("reconcilekit: DeepCopyObject of %T is not an Object", t.obj)
	}
	t.base = base
	return nil
}

func (t *Tick) patchStatus(ctx context.Context) error {
	if equality.Semantic.DeepEqual(t.base.GetStatus(), t.obj.GetStatus()) {
		return nil
	}
	patch := client.MergeFromWithOptions(t.base, client.MergeFromWithOptimisticLock{})
	if err := t.kit.Client.Status().Patch(ctx, t.obj, patch); err != nil {
		kind := t.obj.GetObjectKind().GroupVersionKind().Kind
		if kind == "" {
			kind = strings.TrimPrefix(fmt.Sprintf("%T", t.obj), "*v1alpha1.")
		}
		return client.IgnoreNotFound(fmt.Errorf("patching status of %s %s: %w",
			strings.ToLower(kind), client.ObjectKeyFromObject(t.obj), err))
	}
	t.kit.Writes.wrote(t.obj, t.base.GetResourceVersion(), t.kit.Now())
	return nil
}

// Settle turns the outcome of a tick's work into conditions and a result:
//   - a StalledError: Stalled=True and Ready=False with its reason and message, one warning
//     event when that changed, and a look again after stalledRetry with no error;
//   - another error (transient): Ready=False with reason ReconcileError and the message, and the
//     error returned (retried with backoff);
//   - success: Stalled removed, status.observedGeneration set, res returned.
func (t *Tick) Settle(res ctrl.Result, err error, stalledRetry time.Duration) (ctrl.Result, error) {
	if st, ok := AsStalled(err); ok {
		if MarkStalled(t.obj, st.Reason, st.Err.Error()) {
			t.Warning(st.Reason, st.Err.Error())
		}
		return ctrl.Result{RequeueAfter: stalledRetry}, nil
	}
	if err != nil {
		SetCondition(t.obj, sluicev1.ConditionReady, metav1.ConditionFalse, sluicev1.ReasonReconcileError, err.Error())
		return ctrl.Result{}, err
	}
	ClearStalled(t.obj)
	t.obj.SetObservedGeneration(t.obj.GetGeneration())
	return res, nil
}

// warnUndelivered is the event of a notification that was not delivered.
func warnUndelivered(ctx context.Context, kit Kit, obj runtime.Object, what string, err error) {
	log.FromContext(ctx).Error(err, "Sending notification failed", "event", what)
	kit.Record(ctx, obj, planevent.Event{Type: corev1.EventTypeWarning, Reason: sluicev1.ReasonAlertProviderError,
		Message: fmt.Sprintf("Notification %s not delivered: %v", what, err)})
}
