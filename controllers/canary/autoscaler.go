package canary

import (
	"context"
	"fmt"
	"maps"
	"slices"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/internal/reconcilekit"
)

// +kubebuilder:rbac:groups=autoscaling,resources=horizontalpodautoscalers,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=keda.sh,resources=scaledobjects,verbs=get;list;watch;create;patch

// kedaPausedReplicas is KEDA's annotation that holds a ScaledObject's target at a fixed replica
// count: the canary's ScaledObject carries "0" between runs, so KEDA never scales the idle canary.
const kedaPausedReplicas = "autoscaling.keda.sh/paused-replicas"

// scaledObjectGVK is KEDA's ScaledObject, read and written as unstructured (no KEDA dependency).
var scaledObjectGVK = schema.GroupVersionKind{Group: "keda.sh", Version: "v1alpha1", Kind: "ScaledObject"}

// ensureAutoscalers gives the primary its own copy of the target's autoscaler (spec.autoscalerRef):
// <name>-primary, scaling the primary Deployment, with primaryScalerReplicas and, for a
// ScaledObject, primaryScalerQueries applied. Nothing is written when it is as desired.
// errors: stalled when the target's autoscaler (or KEDA's CRD) is missing, API errors.
func (r *Reconciler) ensureAutoscalers(ctx context.Context, canary *sluicev1.Canary, primary workload) error {
	ref := canary.Spec.AutoscalerRef
	if ref == nil {
		return nil
	}
	if primary.kind() != kindDeployment {
		return reconcilekit.Stalled(sluicev1.ReasonInvalidSpec, "spec.autoscalerRef applies to Deployment targets only, not %s", primary.kind())
	}
	switch ref.Kind {
	case sluicev1.AutoscalerHPA:
		return r.ensurePrimaryHPA(ctx, canary, ref, primary.obj().GetName())
	case sluicev1.AutoscalerScaledObject:
		return r.ensurePrimaryScaledObject(ctx, canary, ref, primary.obj().GetName())
	}
	return reconcilekit.Stalled(sluicev1.ReasonInvalidSpec, "spec.autoscalerRef.kind %q is not supported", ref.Kind)
}

func (r *Reconciler) ensurePrimaryHPA(ctx context.Context, canary *sluicev1.Canary, ref *sluicev1.AutoscalerReference, primary string) error {
	src := &autoscalingv2.HorizontalPodAutoscaler{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: canary.Namespace, Name: ref.Name}, src); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcilekit.Stalled(sluicev1.ReasonTargetNotFound, "spec.autoscalerRef: HorizontalPodAutoscaler %s not found", ref.Name)
		}
		return fmt.Errorf("reading HorizontalPodAutoscaler %s: %w", ref.Name, err)
	}
	if t := src.Spec.ScaleTargetRef; t.Kind != kindDeployment || t.Name != canary.Spec.TargetRef.Name {
		return scalesAnother(canary, "HorizontalPodAutoscaler", ref.Name, t.Kind, t.Name)
	}
	want := *src.Spec.DeepCopy()
	want.ScaleTargetRef = autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: primary}
	if rep := ref.PrimaryScalerReplicas; rep != nil {
		if rep.MinReplicas != nil {
			want.MinReplicas = rep.MinReplicas
		}
		if rep.MaxReplicas != nil {
			want.MaxReplicas = *rep.MaxReplicas
		}
	}
	have := &autoscalingv2.HorizontalPodAutoscaler{}
	err := r.Get(ctx, client.ObjectKey{Namespace: canary.Namespace, Name: primaryName(ref.Name)}, have)
	if err == nil && equality.Semantic.DeepEqual(have.Spec, want) {
		return nil
	}
	hpa := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: primaryName(ref.Name), Namespace: canary.Namespace}}
	_, err = controllerutil.CreateOrPatch(ctx, r.Client, hpa, func() error {
		if hpa.Labels == nil {
			hpa.Labels = map[string]string{}
		}
		hpa.Labels[LabelCanary] = canary.Name
		hpa.Spec = want
		return controllerutil.SetControllerReference(canary, hpa, r.Scheme)
	})
	if err != nil {
		return fmt.Errorf("reconciling HorizontalPodAutoscaler %s: %w", hpa.Name, err)
	}
	return nil
}

func (r *Reconciler) ensurePrimaryScaledObject(ctx context.Context, canary *sluicev1.Canary, ref *sluicev1.AutoscalerReference, primary string) error {
	src, err := r.scaledObject(ctx, canary.Namespace, ref.Name)
	if err != nil {
		return err
	}
	spec, _, _ := unstructured.NestedMap(src.Object, "spec")
	if spec == nil {
		return reconcilekit.Stalled(sluicev1.ReasonInvalidSpec, "spec.autoscalerRef: ScaledObject %s has no spec", ref.Name)
	}
	kind, _, _ := unstructured.NestedString(spec, "scaleTargetRef", "kind")
	name, _, _ := unstructured.NestedString(spec, "scaleTargetRef", "name")
	if kind == "" {
		kind = kindDeployment // KEDA's default
	}
	if kind != kindDeployment || name != canary.Spec.TargetRef.Name {
		return scalesAnother(canary, "ScaledObject", ref.Name, kind, name)
	}
	spec["scaleTargetRef"] = map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": primary}
	if rep := ref.PrimaryScalerReplicas; rep != nil {
		if rep.MinReplicas != nil {
			spec["minReplicaCount"] = int64(*rep.MinReplicas)
		}
		if rep.MaxReplicas != nil {
			spec["maxReplicaCount"] = int64(*rep.MaxReplicas)
		}
	}
	if err := applyPrimaryScalerQueries(ref, spec); err != nil {
		return err
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(src.GroupVersionKind())
	obj.SetName(primaryName(ref.Name))
	obj.SetNamespace(canary.Namespace)
	_, err = controllerutil.CreateOrPatch(ctx, r.Client, obj, func() error {
		labels := obj.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[LabelCanary] = canary.Name
		obj.SetLabels(labels)
		obj.Object["spec"] = spec
		return controllerutil.SetControllerReference(canary, obj, r.Scheme)
	})
	if err != nil {
		return fmt.Errorf("reconciling ScaledObject %s: %w", obj.GetName(), err)
	}
	return nil
}

// applyPrimaryScalerQueries replaces, in the primary's copy of a ScaledObject spec, the query of
// each trigger named in ref.PrimaryScalerQueries (Flagger keys them by trigger name). A key that
// names no trigger would leave the primary scaling on the canary's query, so it stalls the Canary
// naming the key and the triggers there are; nothing is written then.
func applyPrimaryScalerQueries(ref *sluicev1.AutoscalerReference, spec map[string]any) error {
	triggers, _ := spec["triggers"].([]any)
	var names []string
	for _, t := range triggers {
		trig, _ := t.(map[string]any)
		name, _ := trig["name"].(string)
		if name == "" {
			continue
		}
		names = append(names, name)
		if q, ok := ref.PrimaryScalerQueries[name]; ok {
			md, _ := trig["metadata"].(map[string]any)
			if md == nil {
				md = map[string]any{}
			}
			md["query"] = q
			trig["metadata"] = md
		}
	}
	for _, key := range slices.Sorted(maps.Keys(ref.PrimaryScalerQueries)) {
		if !slices.Contains(names, key) {
			return reconcilekit.Stalled(sluicev1.ReasonInvalidSpec,
				"spec.autoscalerRef.primaryScalerQueries: %q names no trigger of ScaledObject %s (named triggers: %q); the keys are trigger names",
				key, ref.Name, names)
		}
	}
	return nil
}

// scaledObject reads a KEDA ScaledObject. errors: stalled when it or KEDA's CRD is missing.
func (r *Reconciler) scaledObject(ctx context.Context, ns, name string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(scaledObjectGVK)
	if err := r.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			return nil, reconcilekit.Stalled(sluicev1.ReasonTargetNotFound, "spec.autoscalerRef: ScaledObject %s not found (is KEDA installed?): %v", name, err)
		}
		return nil, fmt.Errorf("reading ScaledObject %s: %w", name, err)
	}
	return u, nil
}

// pauseCanaryScaledObject holds (paused) or releases the canary's ScaledObject, so KEDA scales
// the canary only during a run. A Canary without a ScaledObject has nothing to do.
func (r *Reconciler) pauseCanaryScaledObject(ctx context.Context, canary *sluicev1.Canary, paused bool) error {
	ref := canary.Spec.AutoscalerRef
	if ref == nil || ref.Kind != sluicev1.AutoscalerScaledObject {
		return nil
	}
	so, err := r.scaledObject(ctx, canary.Namespace, ref.Name)
	if err != nil {
		return err
	}
	ann := maps.Clone(so.GetAnnotations())
	if _, has := ann[kedaPausedReplicas]; has == paused && (!paused || ann[kedaPausedReplicas] == "0") {
		return nil
	}
	patch := client.MergeFrom(so.DeepCopy())
	if ann == nil {
		ann = map[string]string{}
	}
	if paused {
		ann[kedaPausedReplicas] = "0"
	} else {
		delete(ann, kedaPausedReplicas)
	}
	so.SetAnnotations(ann)
	if err := r.Patch(ctx, so, patch); err != nil {
		return fmt.Errorf("pausing ScaledObject %s (%t): %w", ref.Name, paused, err)
	}
	return nil
}

// scaleCanaryUp starts a run's canary: its own replica count when someone (the release, an
// autoscaler) set one, else the primary's (at least 1); a KEDA canary is released first.
// A DaemonSet canary runs on its nodes again.
func (r *Reconciler) scaleCanaryUp(ctx context.Context, canary *sluicev1.Canary, target, primary workload) error {
	if err := r.pauseCanaryScaledObject(ctx, canary, false); err != nil {
		return err
	}
	if n := target.replicas(); n == nil || *n > 0 {
		return nil
	}
	replicas := int32(1)
	if n := primary.replicas(); n != nil && *n > 0 {
		replicas = *n
	}
	return r.scale(ctx, target, replicas)
}

// scaleCanaryDown scales the target to zero, pausing a KEDA canary first so KEDA does not scale
// it back up (an HPA leaves a Deployment at zero replicas alone).
// A DaemonSet canary runs on no node (scaleToZeroKey).
func (r *Reconciler) scaleCanaryDown(ctx context.Context, canary *sluicev1.Canary, target workload) error {
	if err := r.pauseCanaryScaledObject(ctx, canary, true); err != nil {
		return err
	}
	return r.scale(ctx, target, 0)
}

// scalesAnother is the stall of an autoscalerRef whose autoscaler scales another workload than the
// target (a copy-paste slip): copying it would scale the primary with another app's bounds while
// the autoscaler that really scales the target is ignored.
func scalesAnother(canary *sluicev1.Canary, kind, name, targetKind, target string) error {
	return reconcilekit.Stalled(sluicev1.ReasonInvalidSpec, "spec.autoscalerRef: %s %s scales %s %s, not the target Deployment %s: name the target's own autoscaler",
		kind, name, targetKind, target, canary.Spec.TargetRef.Name)
}
