package dataplane

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/dataplane/waves"
)

// outbox holds what a tick delivers once its status patch succeeded: its events and the
// notifications whose dedup keys that patch records. If the patch fails (or conflicts) nothing is
// recorded or sent, and the next tick decides again: one event and one message per transition.
type outbox struct {
	events        []waves.Event
	notifications []waves.Notification
}

func (o *outbox) normal(reason, msg string) {
	o.events = append(o.events, waves.Event{Type: corev1.EventTypeNormal, Reason: reason, Message: msg})
}

func (o *outbox) warning(reason, msg string) {
	o.events = append(o.events, waves.Event{Type: corev1.EventTypeWarning, Reason: reason, Message: msg})
}

// deliver records the outbox's events and hands its notifications to the Notifier; a failed
// notification becomes a warning event (it is not retried: its key is in status).
func (r *Reconciler) deliver(ctx context.Context, dp *sluicev1.DataPlane, out *outbox) {
	for _, e := range out.events {
		r.record(ctx, dp, e.Type, e.Reason, e.Message)
	}
	n := r.Notifier
	if n == nil {
		n = NopNotifier{}
	}
	for _, x := range out.notifications {
		if err := n.Notify(ctx, dp, x); err != nil {
			r.record(ctx, dp, corev1.EventTypeWarning, sluicev1.ReasonAlertProviderError,
				fmt.Sprintf("Sending the %s notification failed: %v", x.Event, err))
		}
	}
}
