package canary

import (
	"context"
	"fmt"
	"maps"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/canary/plan"
	"sluice.dev/sluice/controllers/internal/reconcilekit"
)

// workloadOf summarises a Deployment for the plan (see daemonSet.summary for DaemonSets).
func workloadOf(d *appsv1.Deployment, revision string) plan.Workload {
	desired := int32(1)
	if d.Spec.Replicas != nil {
		desired = *d.Spec.Replicas
	}
	s := d.Status
	return plan.Workload{
		Exists: true, Revision: revision, Desired: desired, Ready: s.ReadyReplicas, Updated: s.UpdatedReplicas,
		ReadyNotAvailable: max(s.ReadyReplicas-s.AvailableReplicas, 0),
		RolledOut: s.ObservedGeneration >= d.Generation && s.UpdatedReplicas >= desired &&
			s.Replicas <= s.UpdatedReplicas,
	}
}

// trackedConfigs reads the checksums of the ConfigMaps and Secrets the target references.
// A missing optional one is skipped; a missing required one stalls the Canary.
func (r *Reconciler) trackedConfigs(ctx context.Context, ns string, refs []configRef) (map[string]string, error) {
	out := make(map[string]string, len(refs))
	for _, ref := range refs {
		key := client.ObjectKey{Namespace: ns, Name: ref.Name}
		var sum string
		var err error
		switch ref.Kind {
		case kindConfigMap:
			cm := &corev1.ConfigMap{}
			if err = r.Get(ctx, key, cm); err == nil {
				sum = configChecksum(cm.Data, cm.BinaryData)
			}
		case kindSecret:
			s := &corev1.Secret{}
			if err = r.Get(ctx, key, s); err == nil {
				sum = configChecksum(s.StringData, s.Data)
			}
		}
		switch {
		case apierrors.IsNotFound(err) && ref.Optional:
			continue
		case apierrors.IsNotFound(err):
			return nil, reconcilekit.Stalled(sluicev1.ReasonTargetNotFound, "%s %s referenced by the target not found", ref.Kind, ref.Name)
		case err != nil:
			return nil, fmt.Errorf("reading %s %s: %w", ref.Kind, ref.Name, err)
		}
		out[ref.Key()] = sum
	}
	return out, nil
}

// ensureServices creates or corrects the apex, primary and canary Services. Only the selector,
// ports and the sluice label are managed; nothing is written when they match. The apex Service
// moves to the primary only once the primary is ready (primaryReady), so adopting a Service that
// already serves never leaves it without ready endpoints; taking over an existing one is
// announced in an event (claimService) and its original spec kept for revertOnDeletion.
func (r *Reconciler) ensureServices(ctx context.Context, tick *reconcilekit.Tick, canary *sluicev1.Canary, target workload, primaryReady bool) error {
	desired, err := desiredServices(canary, target)
	if err != nil {
		return reconcilekit.Stalled(sluicev1.ReasonInvalidSpec, "%w", err)
	}
	apexName := canary.ServiceNames().Apex
	for _, want := range desired {
		apex := want.Name == apexName
		have := &corev1.Service{}
		err := r.Get(ctx, client.ObjectKeyFromObject(want), have)
		if err == nil && !ownedBy(have, canary) && !apex {
			return claimService(tick, canary, have, false) // never a Service Sluice did not create
		}
		if client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("reading service %s: %w", want.Name, err)
		}
		if apex {
			existing := have
			if err != nil {
				existing = nil
			}
			want.Spec.Selector = apexSelector(canary, existing, desired[1].Spec.Selector, desired[2].Spec.Selector)
		}
		if err == nil {
			if err := headlessMismatch(have, want); err != nil {
				return reconcilekit.Stalled(sluicev1.ReasonInvalidSpec, "%w", err)
			}
		}
		if err == nil && serviceMatches(have, want) {
			continue // the common, idle case: no conversion, no request
		}
		if apex && !primaryReady {
			continue // the apex moves to the primary only once the primary serves
		}
		takeover := apex && err == nil && !ownedBy(have, canary)
		if takeover {
			if err := claimService(tick, canary, have, true); err != nil {
				return err
			}
		}
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: want.Name, Namespace: want.Namespace}}
		_, err = controllerutil.CreateOrPatch(ctx, r.Client, svc, func() error {
			if takeover {
				if err := rememberOriginal(svc); err != nil {
					return err
				}
			}
			if svc.Labels == nil {
				svc.Labels = map[string]string{}
			}
			maps.Copy(svc.Labels, want.Labels)
			if len(want.Annotations) > 0 {
				if svc.Annotations == nil {
					svc.Annotations = map[string]string{}
				}
				maps.Copy(svc.Annotations, want.Annotations)
			}
			svc.Spec.Selector = want.Spec.Selector
			if !portsMatch(svc.Spec.Ports, want.Spec.Ports) {
				svc.Spec.Ports = want.Spec.Ports
			}
			if svc.CreationTimestamp.IsZero() {
				svc.Spec.Type = want.Spec.Type
				svc.Spec.ClusterIP = want.Spec.ClusterIP
				return controllerutil.SetControllerReference(canary, svc, r.Scheme)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("reconciling service %s: %w", want.Name, err)
		}
	}
	return nil
}

// serviceMatches reports whether have already carries want's selector, ports, labels and
// annotations.
func serviceMatches(have, want *corev1.Service) bool {
	for k, v := range want.Labels {
		if have.Labels[k] != v {
			return false
		}
	}
	for k, v := range want.Annotations {
		if have.Annotations[k] != v {
			return false
		}
	}
	return maps.Equal(have.Spec.Selector, want.Spec.Selector) && portsMatch(have.Spec.Ports, want.Spec.Ports)
}

// portsMatch compares the fields Sluice sets, ignoring what the apiserver defaults (NodePort).
func portsMatch(have, want []corev1.ServicePort) bool {
	if len(have) != len(want) {
		return false
	}
	for i := range want {
		h, w := have[i], want[i]
		if h.Name != w.Name || h.Port != w.Port || h.TargetPort != w.TargetPort || h.Protocol != w.Protocol ||
			!equality.Semantic.DeepEqual(h.AppProtocol, w.AppProtocol) {
			return false
		}
	}
	return true
}

// ensurePrimary returns the primary (of the target's kind), creating it (and the -primary config
// copies) from the target when it does not exist yet — at initialization, or later only when the
// target runs the promoted revision (otherwise the Canary stalls with reason PrimaryMissing).
func (r *Reconciler) ensurePrimary(ctx context.Context, tick *reconcilekit.Tick, canary *sluicev1.Canary, target workload,
	refs []configRef, revision string) (primary workload, created bool, err error) {
	primary = newWorkload(target.kind())
	name, kind := primaryName(target.obj().GetName()), strings.ToLower(target.kind())
	err = r.Get(ctx, client.ObjectKey{Namespace: canary.Namespace, Name: name}, primary.obj())
	if err == nil {
		if !ownedBy(primary.obj(), canary) {
			return nil, false, notOwned(canary, target.kind(), name)
		}
		return primary, false, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, false, fmt.Errorf("reading primary %s: %w", kind, err)
	}
	if promoted := canary.Status.LastPromotedSpec; promoted != "" && revision != promoted {
		// The primary is gone and the target runs another revision: rebuilding the primary from it
		// would promote a revision no analysis has passed.
		return nil, false, reconcilekit.Stalled(sluicev1.ReasonPrimaryMissing, "primary %s %s is missing and the target runs revision %s, not the promoted %s: "+
			"set the target back to the promoted version (Sluice then rebuilds the primary from it) or recreate %s",
			kind, name, revision, promoted, name)
	}
	// The primary is a copy of the whole target, which the cache does not hold.
	observed, err := templateStateOf(target)
	if err != nil {
		return nil, false, err
	}
	if target, err = r.wholeWorkload(ctx, target, observed); err != nil {
		return nil, false, err
	}
	if err := r.copyConfigs(ctx, canary, refs); err != nil {
		return nil, false, err
	}
	primary, err = newPrimary(canary, target, refs, revision)
	if err != nil {
		return nil, false, reconcilekit.Stalled(sluicev1.ReasonInvalidSpec, "%w", err)
	}
	if err := controllerutil.SetControllerReference(canary, primary.obj(), r.Scheme); err != nil {
		return nil, false, err
	}
	if err := r.Create(ctx, primary.obj()); err != nil {
		return nil, false, fmt.Errorf("creating primary %s %s: %w", kind, name, err)
	}
	tick.Normal(sluicev1.ReasonPrimaryCreated, fmt.Sprintf("Created %s from %s at revision %s", name, target.obj().GetName(), revision))
	return primary, true, nil
}

// copyConfigs writes <name>-primary copies of the tracked ConfigMaps and Secrets, owned by the
// Canary. Missing optional configs are skipped.
func (r *Reconciler) copyConfigs(ctx context.Context, canary *sluicev1.Canary, refs []configRef) error {
	for _, ref := range refs {
		key := client.ObjectKey{Namespace: canary.Namespace, Name: ref.Name}
		src := newConfigObject(ref.Kind, canary.Namespace, ref.Name)
		if err := r.Get(ctx, key, src); err != nil {
			if apierrors.IsNotFound(err) && ref.Optional {
				continue
			}
			return fmt.Errorf("reading %s %s: %w", ref.Kind, ref.Name, err)
		}
		err := r.writeOwnedConfig(ctx, canary, ref.Kind, newConfigObject(ref.Kind, canary.Namespace, primaryName(ref.Name)), src, nil)
		if err != nil {
			return fmt.Errorf("copying %s %s to %s: %w", ref.Kind, ref.Name, primaryName(ref.Name), err)
		}
	}
	return nil
}

// promotePrimary copies the target's template and tracked configs to the primary at revision,
// keeping the configs and template it ran as its restore point first. The template is the whole
// one (read from the apiserver when the cache holds a trimmed target: wholeWorkload), and only
// the one the tick observed, whose hash state is targetTemplate.
func (r *Reconciler) promotePrimary(ctx context.Context, canary *sluicev1.Canary, target workload, targetTemplate string,
	primary workload, refs []configRef, revision string) error {
	target, err := r.wholeWorkload(ctx, target, targetTemplate)
	if err != nil {
		return err
	}
	if primary.obj().GetAnnotations()[AnnotationRevision] != revision {
		// Before the copies change: the configs of the revision the primary runs are its restore
		// point, with the template rememberRestorePoint keeps.
		if err := r.snapshotConfigs(ctx, canary, primary); err != nil {
			return err
		}
	}
	if err := r.copyConfigs(ctx, canary, refs); err != nil {
		return err
	}
	tpl, err := primaryTemplate(target, refs)
	if err != nil {
		return reconcilekit.Stalled(sluicev1.ReasonInvalidSpec, "%w", err)
	}
	obj := primary.obj()
	patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	if n := target.replicas(); canary.Spec.AutoscalerRef == nil && n != nil && *n > 0 {
		// Without an autoscaler the primary follows the target's replicas (the release's count).
		primary.scaleTo(max(*n, ptr.Deref(primary.replicas(), 0)))
	}
	ann := obj.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	if err := rememberRestorePoint(primary, ann, revision); err != nil {
		return err
	}
	*primary.podTemplate() = tpl
	ann[AnnotationRevision] = revision
	obj.SetAnnotations(ann)
	if err := r.patchWorkload(ctx, obj, patch); err != nil {
		return fmt.Errorf("promoting primary %s: %w", obj.GetName(), err)
	}
	return nil
}

// scale sets a workload's replicas when they differ (a DaemonSet: 0 runs it on no node, more on
// its nodes).
func (r *Reconciler) scale(ctx context.Context, w workload, replicas int32) error {
	before := w.obj().DeepCopyObject().(client.Object)
	if !w.scaleTo(replicas) {
		return nil
	}
	if err := r.patchWorkload(ctx, w.obj(), client.MergeFrom(before)); err != nil {
		return fmt.Errorf("scaling %s to %d: %w", w.obj().GetName(), replicas, err)
	}
	return nil
}

// patchWorkload patches a target or a primary and remembers the write (workloadWrites): a tick
// that reads the workload from a cache that has not shown the write yet waits for it instead of
// deciding again from the version it replaced, which would repeat the write (observe).
func (r *Reconciler) patchWorkload(ctx context.Context, obj client.Object, patch client.Patch) error {
	basedOn := obj.GetResourceVersion()
	if err := r.Patch(ctx, obj, patch); err != nil {
		return err
	}
	r.workloadWrites.Wrote(obj, basedOn, r.kit().Now())
	return nil
}
