package canary

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// The restore point of the -primary ConfigMap and Secret copies. Before a promotion overwrites a
// copy <name>-primary, its data is kept in <name>-primary-restore (same kind, owned by the Canary,
// annotated with the revision the data belongs to), so a rollback returns the primary to the last
// promoted revision whole: pod template and configs. The snapshots live in the cluster, so a
// restarted controller finds them; a revision is a hash of the template and the config data, so a
// snapshot tagged with revision R holds exactly R's data.
const (
	// restoreSuffix is appended to a -primary copy's name for its restore point.
	restoreSuffix = "-restore"
	// AnnotationRestoreAbsent on a restore point says the copy did not exist at that revision (an
	// optional config): restoring it deletes the copy.
	AnnotationRestoreAbsent = "sluice.dev/restore-absent"
)

func restoreName(copyName string) string { return copyName + restoreSuffix }

// primaryCopies lists the -primary copies a primary pod template references.
func primaryCopies(tpl *corev1.PodTemplateSpec) []configRef {
	var out []configRef
	for _, ref := range configRefs(&tpl.Spec) {
		if strings.HasSuffix(ref.Name, primarySuffix) {
			out = append(out, ref)
		}
	}
	return out
}

func newConfigObject(kind, ns, name string) client.Object {
	if kind == kindConfigMap {
		cm := &corev1.ConfigMap{}
		cm.Namespace, cm.Name = ns, name
		return cm
	}
	s := &corev1.Secret{}
	s.Namespace, s.Name = ns, name
	return s
}

// copyConfigData copies the data (and a Secret's type) of src into dst, both of the same kind.
func copyConfigData(dst, src client.Object) {
	switch d := dst.(type) {
	case *corev1.ConfigMap:
		s := src.(*corev1.ConfigMap)
		d.Data, d.BinaryData = s.Data, s.BinaryData
	case *corev1.Secret:
		s := src.(*corev1.Secret)
		d.Data, d.Type = s.Data, s.Type
	}
}

// writeOwnedConfig creates or patches dst (a ConfigMap or Secret of kind, named in dst), owned by
// the Canary: src's data, Sluice's label, the Canary as controller, and what annotate (when set)
// writes into its annotations. A dst that exists and is not the Canary's is refused (notOwned).
func (r *Reconciler) writeOwnedConfig(ctx context.Context, canary *sluicev1.Canary, kind string, dst, src client.Object,
	annotate func(map[string]string)) error {
	_, err := controllerutil.CreateOrPatch(ctx, r.Client, dst, func() error {
		if dst.GetUID() != "" && !ownedBy(dst, canary) {
			return notOwned(canary, configKind(kind), dst.GetName())
		}
		copyConfigData(dst, src)
		if annotate != nil {
			annotations := dst.GetAnnotations()
			if annotations == nil {
				annotations = map[string]string{}
			}
			annotate(annotations)
			dst.SetAnnotations(annotations)
		}
		labels := dst.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[LabelCanary] = canary.Name
		dst.SetLabels(labels)
		return controllerutil.SetControllerReference(canary, dst, r.Scheme)
	})
	return err
}

// getConfig reads a ConfigMap or Secret; found is false when it does not exist.
func (r *Reconciler) getConfig(ctx context.Context, kind, ns, name string) (obj client.Object, found bool, err error) {
	obj = newConfigObject(kind, ns, name)
	switch err := r.Get(ctx, client.ObjectKeyFromObject(obj), obj); {
	case apierrors.IsNotFound(err):
		return obj, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("reading %s %s: %w", configKind(kind), name, err)
	}
	return obj, true, nil
}

// snapshotConfigs keeps the data of the copies the primary's current template references as the
// restore point of its revision, before a promotion overwrites them. A restore point already
// taken for that revision is kept: a retried promotion (after a lost write or a crash between the
// config copies and the primary's update) must not snapshot the new data.
func (r *Reconciler) snapshotConfigs(ctx context.Context, canary *sluicev1.Canary, primary workload) error {
	revision := primary.obj().GetAnnotations()[AnnotationRevision]
	if revision == "" {
		return nil
	}
	for _, ref := range primaryCopies(primary.podTemplate()) {
		src, exists, err := r.getConfig(ctx, ref.Kind, canary.Namespace, ref.Name)
		if err != nil {
			return err
		}
		if exists && !ownedBy(src, canary) {
			continue // not a copy Sluice made: nothing of ours to restore
		}
		kept, err := r.copyKept(ctx, ref, canary.Namespace, src, exists)
		if err != nil {
			return err
		}
		if kept {
			continue // this promotion leaves the copy as it is (an image-only release)
		}
		snap, found, err := r.getConfig(ctx, ref.Kind, canary.Namespace, restoreName(ref.Name))
		if err != nil {
			return err
		}
		if found && snap.GetAnnotations()[AnnotationRevision] == revision {
			continue
		}
		dst := newConfigObject(ref.Kind, canary.Namespace, restoreName(ref.Name))
		err = r.writeOwnedConfig(ctx, canary, ref.Kind, dst, src, func(annotations map[string]string) {
			annotations[AnnotationRevision] = revision
			delete(annotations, AnnotationRestoreAbsent)
			if !exists {
				annotations[AnnotationRestoreAbsent] = "true"
			}
		})
		if err != nil {
			return fmt.Errorf("keeping the restore point of %s %s: %w", configKind(ref.Kind), ref.Name, err)
		}
		// The copies are overwritten only once the restore point is certainly there.
		if err := r.confirmSnapshot(ctx, dst, revision); err != nil {
			return err
		}
	}
	return nil
}

// copyKept reports whether a promotion leaves the copy (read as copied, exists) as it is: its
// source config <name> (the copy's name without -primary) is missing, so copyConfigs skips it, or
// holds the very data the copy has. Such a copy needs no restore point: it already holds the data
// of the revision the primary runs. A copy a retried promotion already overwrote still has its
// restore point from the first attempt, which this never removes.
func (r *Reconciler) copyKept(ctx context.Context, ref configRef, ns string, copied client.Object, exists bool) (bool, error) {
	source, found, err := r.getConfig(ctx, ref.Kind, ns, strings.TrimSuffix(ref.Name, primarySuffix))
	if err != nil || !found {
		return !found, err
	}
	return exists && sameConfigData(source, copied), nil
}

// sameConfigData reports whether two ConfigMaps or two Secrets hold the same data.
func sameConfigData(a, b client.Object) bool {
	switch x := a.(type) {
	case *corev1.ConfigMap:
		y, ok := b.(*corev1.ConfigMap)
		return ok && equality.Semantic.DeepEqual(x.Data, y.Data) && equality.Semantic.DeepEqual(x.BinaryData, y.BinaryData)
	case *corev1.Secret:
		y, ok := b.(*corev1.Secret)
		return ok && x.Type == y.Type && equality.Semantic.DeepEqual(x.Data, y.Data)
	}
	return false
}

// confirmSnapshot reads the restore point snap back (from the apiserver when an API reader is
// set) and fails unless it holds revision: a write reported done but not there would let the
// promotion overwrite the only copy of the promoted revision's configs.
func (r *Reconciler) confirmSnapshot(ctx context.Context, snap client.Object, revision string) error {
	var reader client.Reader = r.Client
	if r.APIReader != nil {
		reader = r.APIReader
	}
	got, ok := snap.DeepCopyObject().(client.Object)
	if !ok {
		return fmt.Errorf("%T is not a client.Object", snap)
	}
	if err := reader.Get(ctx, client.ObjectKeyFromObject(snap), got); err != nil {
		return fmt.Errorf("confirming the restore point %s: %w", snap.GetName(), err)
	}
	if got.GetAnnotations()[AnnotationRevision] != revision {
		return fmt.Errorf("restore point %s holds revision %q, not %s: not written yet", snap.GetName(), got.GetAnnotations()[AnnotationRevision], revision)
	}
	return nil
}

// restoreConfigs writes the restore points taken at revision want back into the copies tpl (the
// pod template of want) references. It reports how many copies it restored. A copy without a
// restore point for want is left as it is.
func (r *Reconciler) restoreConfigs(ctx context.Context, canary *sluicev1.Canary, tpl *corev1.PodTemplateSpec, want string) (int, error) {
	restored := 0
	for _, ref := range primaryCopies(tpl) {
		snap, found, err := r.getConfig(ctx, ref.Kind, canary.Namespace, restoreName(ref.Name))
		if err != nil {
			return restored, err
		}
		if !found || !ownedBy(snap, canary) || snap.GetAnnotations()[AnnotationRevision] != want {
			continue
		}
		if snap.GetAnnotations()[AnnotationRestoreAbsent] == "true" {
			left, err := r.deleteOwned(ctx, canary, newConfigObject(ref.Kind, canary.Namespace, ref.Name))
			if err != nil {
				return restored, fmt.Errorf("restoring %s %s (absent at %s): %w", configKind(ref.Kind), ref.Name, want, err)
			}
			if left {
				return restored, notOwned(canary, configKind(ref.Kind), ref.Name)
			}
			restored++
			continue
		}
		err = r.writeOwnedConfig(ctx, canary, ref.Kind, newConfigObject(ref.Kind, canary.Namespace, ref.Name), snap, nil)
		if err != nil {
			return restored, fmt.Errorf("restoring %s %s to revision %s: %w", configKind(ref.Kind), ref.Name, want, err)
		}
		restored++
	}
	return restored, nil
}

// settleConfigs makes the copies agree with the revision the primary runs. A restore point
// tagged with that very revision means a promotion or a rollback was interrupted between the
// config copies and the primary's update (a crash, a lost write): the copies may hold another
// revision's data, so they are restored from it; then the restore point, no longer needed, is
// removed. The primary is read from the apiserver first when an API reader is set, so a lagging
// cache never turns back the copies of a primary already promoted.
func (r *Reconciler) settleConfigs(ctx context.Context, canary *sluicev1.Canary, primary workload) error {
	revision := primary.obj().GetAnnotations()[AnnotationRevision]
	if revision == "" {
		return nil
	}
	var pending []configRef
	for _, ref := range primaryCopies(primary.podTemplate()) {
		snap, found, err := r.getConfig(ctx, ref.Kind, canary.Namespace, restoreName(ref.Name))
		if err != nil {
			return err
		}
		if found && ownedBy(snap, canary) && snap.GetAnnotations()[AnnotationRevision] == revision {
			pending = append(pending, ref)
		}
	}
	if len(pending) == 0 {
		return nil
	}
	if r.APIReader != nil {
		live := newWorkload(primary.kind()).obj()
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(primary.obj()), live); err != nil {
			return fmt.Errorf("reading primary %s: %w", primary.obj().GetName(), err)
		}
		if live.GetAnnotations()[AnnotationRevision] != revision {
			return nil // the cache lags; look again next tick
		}
	}
	if _, err := r.restoreConfigs(ctx, canary, primary.podTemplate(), revision); err != nil {
		return err
	}
	for _, ref := range pending {
		if _, err := r.deleteOwned(ctx, canary, newConfigObject(ref.Kind, canary.Namespace, restoreName(ref.Name))); err != nil {
			return fmt.Errorf("removing the restore point of %s %s: %w", configKind(ref.Kind), ref.Name, err)
		}
	}
	return nil
}
