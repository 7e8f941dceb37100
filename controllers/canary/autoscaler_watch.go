package canary

import (
	"context"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// indexAutoscaler indexes Canaries by spec.autoscalerRef ("<Kind>/<name>").
const indexAutoscaler = "spec.autoscalerRef"

func indexAutoscalerValue(o client.Object) []string {
	if ref := o.(*sluicev1.Canary).Spec.AutoscalerRef; ref != nil {
		return []string{ref.Kind + "/" + ref.Name}
	}
	return nil
}

// registerAutoscalerIndex adds indexAutoscaler to the cache.
func registerAutoscalerIndex(ctx context.Context, idx client.FieldIndexer) error {
	return idx.IndexField(ctx, &sluicev1.Canary{}, indexAutoscaler, indexAutoscalerValue)
}

// watchAutoscalers wakes a Canary when the primary's autoscaler it owns is deleted or edited
// (ensureAutoscalers puts it back), and when the user's autoscaler it names changes (its spec is
// copied to the primary's): both at once, also while the Canary is idle, not at the next run.
// Only spec changes and deletions count (GenerationChangedPredicate): an autoscaler's status is
// rewritten every few seconds and would otherwise keep every idle Canary busy. KEDA's ScaledObject
// is watched only where its CRD is installed.
func (r *Reconciler) watchAutoscalers(b *builder.Builder, mapper meta.RESTMapper) *builder.Builder {
	specOnly := builder.WithPredicates(predicate.GenerationChangedPredicate{})
	named := func(kind string) handler.EventHandler {
		return handler.EnqueueRequestsFromMapFunc(r.byIndex(indexAutoscaler, func(o client.Object) string { return kind + "/" + o.GetName() }))
	}
	b = b.Owns(&autoscalingv2.HorizontalPodAutoscaler{}, specOnly).
		Watches(&autoscalingv2.HorizontalPodAutoscaler{}, named(sluicev1.AutoscalerHPA), specOnly)
	if installed(mapper, scaledObjectGVK.GroupKind()) {
		so := &unstructured.Unstructured{}
		so.SetGroupVersionKind(scaledObjectGVK)
		b = b.Owns(so, specOnly).Watches(so.DeepCopy(), named(sluicev1.AutoscalerScaledObject), specOnly)
	}
	return b
}
