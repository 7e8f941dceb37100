package canary

import (
	"context"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/canary/plan"
)

// Request economy. A run of the seed's shape (5 steps, then promotion) costs, besides what the
// actions themselves need (a route write per weight, scaling the canary up and down, promoting the
// primary), one status patch per transition and one Kubernetes event per announced transition:
//
//   - a check reads around the cache first (issue 13: act on a current Canary), except when the
//     cached Canary is the very version our own last status patch produced (Kit.ShowsOwnWrite):
//     then the cache already holds everything a read would have returned when that patch came
//     back, and in a run that is every check after the first. The check memo (gather.go) and the
//     status patch's optimistic lock keep a check from counting twice. Webhook gates, which call
//     out, always read first;
//   - the steps of a run that goes as planned are not posted as Kubernetes events unless
//     Options.StepEvents: each weight step, and the start of the promotion (Promoting), which is
//     the step after the last weight and is followed by Succeeded (or a rollback) as soon as the
//     primary has rolled out. Each is in the status (phase, canaryWeight, iterations, the Ready
//     condition's message, lastTransitionTime), the log, the sluice_canary_weight and
//     sluice_canary_phase metrics and the event webhooks; every transition a user acts on (a new
//     revision, success, each failed check or check without evidence, rollback, drift, gates,
//     waits) is an event;
//   - counting runs in flight for --max-progressing and finding the Canaries of one target use
//     cache indexes, so a tick's work does not grow with the number of Canaries;
//   - idle Canaries are not requeued (requeue.go).

// indexRunning indexes Canaries whose run holds a slot of the cap on runs in flight
// (--max-progressing) under "true", and those in line for one under indexRunningCapped
// (capline.go).
const (
	indexRunning       = "status.running"
	indexRunningCapped = "capped"
)

func indexRunningValue(o client.Object) []string {
	c := o.(*sluicev1.Canary)
	switch {
	case holdsSlot(c):
		return []string{"true"}
	case inLine(c):
		return []string{indexRunningCapped}
	}
	return nil
}

// registerEconomyIndexes adds the indexes of this file to the manager's cache.
func registerEconomyIndexes(ctx context.Context, idx client.FieldIndexer) error {
	return idx.IndexField(ctx, &sluicev1.Canary{}, indexRunning, indexRunningValue)
}

// eventRecorder is the recorder of the tick's events: r.Recorder, without the steps (weights and
// the start of the promotion) unless Options.StepEvents.
func (r *Reconciler) eventRecorder() events.EventRecorder {
	if r.Recorder == nil || r.StepEvents {
		return r.Recorder
	}
	return withoutSteps{r.Recorder}
}

// withoutSteps drops the Normal WeightAdvanced and Promoting events (already logged by the kit,
// and delivered to the event webhooks from the tick's outbox).
type withoutSteps struct{ events.EventRecorder }

func (w withoutSteps) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	if eventtype == "Normal" && (reason == plan.EventAdvanced || reason == plan.EventPromoting) {
		return
	}
	w.EventRecorder.Eventf(regarding, related, eventtype, reason, action, note, args...)
}

// listIndexed lists the Canaries whose index holds value, in namespace ns ("" for all), through
// the cache's index. A reader without the cache (tests on a direct client) gets the apiserver's
// "field label not supported" instead: then it lists and filters by the same index function.
func (r *Reconciler) listIndexed(ctx context.Context, list *sluicev1.CanaryList, ns, index, value string,
	indexFunc func(client.Object) []string) error {
	opts := []client.ListOption{client.MatchingFields{index: value}, client.UnsafeDisableDeepCopy}
	if ns != "" {
		opts = append(opts, client.InNamespace(ns))
	}
	err := r.List(ctx, list, opts...)
	if !apierrors.IsBadRequest(err) {
		return err
	}
	all := &sluicev1.CanaryList{}
	if err := r.List(ctx, all, client.InNamespace(ns)); err != nil {
		return err
	}
	list.Items = list.Items[:0]
	for i := range all.Items {
		if slices.Contains(indexFunc(&all.Items[i]), value) {
			list.Items = append(list.Items, all.Items[i])
		}
	}
	return nil
}

func indexTargetValue(o client.Object) []string {
	return []string{o.(*sluicev1.Canary).Spec.TargetRef.Name}
}
