package canary

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/internal/reconcilekit"
)

// Annotations on the primary Deployment that keep its last promoted pod template while a newer
// revision is being promoted, so a rollback can put it back.
const (
	// AnnotationRestoreRevision names the revision AnnotationRestoreTemplate holds.
	AnnotationRestoreRevision = "sluice.dev/restore-revision"
	// AnnotationRestoreTemplate holds the pod template (JSON) the primary ran before the
	// promotion in flight.
	AnnotationRestoreTemplate = "sluice.dev/restore-template"
)

// rememberRestorePoint keeps the primary's current template as its restore point (in ann, the
// primary's annotations being changed) before it is promoted to revision; a retried promotion
// (the primary already at revision) keeps the first.
func rememberRestorePoint(primary workload, ann map[string]string, revision string) error {
	current := ann[AnnotationRevision]
	if current == "" || current == revision {
		return nil
	}
	data, err := json.Marshal(primary.podTemplate())
	if err != nil {
		return fmt.Errorf("remembering the template of %s: %w", primary.obj().GetName(), err)
	}
	ann[AnnotationRestoreRevision] = current
	ann[AnnotationRestoreTemplate] = string(data)
	return nil
}

// restorePrimary puts the primary back on revision want from its restore point: a rollback after
// the primary had been promoted. The -primary ConfigMap and Secret copies are restored first (from
// their restore points, see snapshotConfigs), then the pod template: if the process dies between
// the two, the primary still names the promoted-but-failed revision and the next tick restores
// again. The restore points of the configs are removed once the primary runs want again
// (settleConfigs). errors: stalled when no restore point holds want.
func (r *Reconciler) restorePrimary(ctx context.Context, canary *sluicev1.Canary, primary workload, want string) error {
	obj := primary.obj()
	ann := obj.GetAnnotations()
	if ann[AnnotationRevision] == want {
		return nil
	}
	if ann[AnnotationRestoreRevision] != want {
		return reconcilekit.Stalled(sluicev1.ReasonPrimaryMissing,
			"primary %s runs revision %s and has no restore point for the promoted revision %s: set the target back to it",
			obj.GetName(), ann[AnnotationRevision], want)
	}
	var tpl corev1.PodTemplateSpec
	if err := json.Unmarshal([]byte(ann[AnnotationRestoreTemplate]), &tpl); err != nil {
		return fmt.Errorf("reading the restore point of %s: %w", obj.GetName(), err)
	}
	if _, err := r.restoreConfigs(ctx, canary, &tpl, want); err != nil {
		return err
	}
	patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	*primary.podTemplate() = tpl
	ann = maps.Clone(ann)
	ann[AnnotationRevision] = want
	delete(ann, AnnotationRestoreRevision)
	delete(ann, AnnotationRestoreTemplate)
	obj.SetAnnotations(ann)
	if err := r.patchWorkload(ctx, obj, patch); err != nil {
		return fmt.Errorf("restoring primary %s to %s: %w", obj.GetName(), want, err)
	}
	return nil
}
