package reconcilekit

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/notify"
)

// Notifier delivers notifications to the AlertProviders of a list of alerts; notify.Notifier
// implements it.
type Notifier interface {
	// Check resolves every AlertProvider and Secret the alerts name (providerRefs without a
	// namespace are in namespace), without sending. errors: notify.ErrProviderConfig naming the
	// missing object or key.
	Check(ctx context.Context, namespace string, alerts []sluicev1.CanaryAlert) error
	// Send delivers msg to the alerts whose severity accepts it.
	Send(ctx context.Context, alerts []sluicev1.CanaryAlert, msg notify.Message) error
}

// Notify queues msg for alerts, sent through n after the status patch succeeded, in the
// background (Kit.Deliveries): a slow alert provider never holds the reconcile. A failure
// becomes a warning event with reason AlertProviderError (not retried: the status already
// records the notification as sent). A nil n or no alerts sends nothing.
func (t *Tick) Notify(n Notifier, alerts []sluicev1.CanaryAlert, msg notify.Message) {
	if n == nil || len(alerts) == 0 {
		return
	}
	t.Defer(func(ctx context.Context) {
		kit, obj := t.kit, t.obj.DeepCopyObject()
		// The delivery outlives the reconcile: keep the context's values (the logger), not its
		// cancellation; the notifier's timeout bounds it.
		ctx = context.WithoutCancel(ctx)
		deliver := func() {
			if err := n.Send(ctx, alerts, msg); err != nil {
				warnUndelivered(ctx, kit, obj, string(msg.Event), err)
			}
		}
		if kit.Deliveries == nil {
			go deliver()
			return
		}
		kit.Deliveries.Go(deliver)
	})
}

// CheckAlerts sets sluicev1.ConditionAlertProviderError from n.Check (removes it when the alerts resolve
// or there are none): a missing AlertProvider, Secret or key is a clear condition, not a crash.
func (t *Tick) CheckAlerts(ctx context.Context, n Notifier, namespace string, alerts []sluicev1.CanaryAlert) {
	if n == nil || len(alerts) == 0 {
		RemoveCondition(t.obj, sluicev1.ConditionAlertProviderError)
		return
	}
	if err := n.Check(ctx, namespace, alerts); err != nil {
		SetCondition(t.obj, sluicev1.ConditionAlertProviderError, metav1.ConditionTrue, sluicev1.ReasonAlertProviderError, err.Error())
		return
	}
	RemoveCondition(t.obj, sluicev1.ConditionAlertProviderError)
}

// FirstNotice adds key to the dedup keys a status keeps (status.notifications) and reports
// whether it was new: a notification is sent once per key.
func FirstNotice(keys *[]string, key string) bool {
	for _, k := range *keys {
		if k == key {
			return false
		}
	}
	*keys = append(*keys, key)
	return true
}
