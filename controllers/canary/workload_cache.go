package canary

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"sluice.dev/sluice/mesh"
)

// Workloads in the manager's cache. The cache holds every Deployment and DaemonSet of the watched
// namespaces, most of them neither a target nor a primary, and a pod template is most of a
// workload (containers' env, resources, probes, volumes). TrimWorkload keeps of a workload only
// what the controllers read from the cache:
//
//   - Sluice's own workloads (the primaries, labelled LabelCanary) whole: promotion, rollback and
//     the restore points read and rewrite their template, and the primary's conditions say what
//     it waits on;
//   - of every other one, its metadata, spec and status, but of the pod template only the
//     annotations package mesh reads (mesh.TemplateAnnotationsOf: the data-plane controller's
//     restart token and proxy version), the node selector (a DaemonSet canary's scale-to-zero),
//     each container's name, image, ports (spec.service.portDiscovery) and restart policy, and
//     every ConfigMap and Secret reference (configRefs: the tracked configs), and of a
//     Deployment's conditions only ReplicaFailure; plus, in AnnotationTemplateHashState, the
//     state of the revision hash after the template (templateHashState), from which
//     revisionFromState finishes the revision with the configs' checksums: revisionOf's value,
//     without the template.
//
// A target's whole template is needed only to build or promote the primary from it: wholeWorkload
// reads it from the apiserver then (one GET per primary built or promoted) and refuses a template
// other than the one the tick observed, so a primary never gets a template no run analysed.
// Sluice writes a target only with merge patches of its replicas (a DaemonSet: its node
// selector) computed between two copies of the cached object, so what the cache leaves out is
// never in a patch (TestTrimmedTargetPatchesLikeWhole).

// AnnotationTemplateHashState is set by the cache on its trimmed copies only (never written to
// the apiserver): the base64 state of revisionOf's SHA-256 after the pod template, sealed (see
// sealState) so that only this process's cache can have set it.
const AnnotationTemplateHashState = "cache.sluice.dev/template-hash-state"

// stateKey authenticates the hash states this process's cache sets. An informer may run its
// transform again on an object it already transformed (a relist, a resync): the seal tells that
// copy from an object whose author set the annotation, which is never trusted.
var stateKey = func() []byte {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		panic(fmt.Sprintf("reading random bytes: %v", err))
	}
	return k
}()

// stateSeal is the MAC of state on the object obj (its UID). It does not change with the object's
// resourceVersion: a change of the status alone leaves the cached annotations equal, which the
// target watch reads as a status-only change (statusOnlyChange).
func stateSeal(obj client.Object, state string) string {
	m := hmac.New(sha256.New, stateKey)
	m.Write([]byte(string(obj.GetUID()) + "/" + state))
	return base64.RawStdEncoding.EncodeToString(m.Sum(nil)[:16])
}

// sealState is the annotation value of state on obj: state, a dot, its seal.
func sealState(obj client.Object, state string) string { return state + "." + stateSeal(obj, state) }

// cachedState returns the hash state this process's cache set on obj, if it did.
func cachedState(obj client.Object) (string, bool) {
	v, ok := obj.GetAnnotations()[AnnotationTemplateHashState]
	if !ok {
		return "", false
	}
	state, seal, ok := strings.Cut(v, ".")
	if !ok || !hmac.Equal([]byte(seal), []byte(stateSeal(obj, state))) {
		return "", false
	}
	return state, true
}

// errTargetChanged: the target's whole template (read from the apiserver, or returned by a write
// of this tick) is not the one the tick observed. Nothing is copied from it: the tick looks again
// shortly (observe), or is retried (a promotion), from a cache that shows the new template.
var errTargetChanged = errors.New("the target's pod template changed since this tick read it")

// TrimWorkload is the cache transform of Deployments and DaemonSets (see above). Other objects
// pass unchanged.
func TrimWorkload(in any) (any, error) {
	obj, ok := in.(client.Object)
	if !ok {
		return in, nil
	}
	if _, done := cachedState(obj); done {
		return obj, nil // trimmed already
	}
	stripCacheMeta(obj)
	if obj.GetLabels()[LabelCanary] != "" {
		return obj, nil
	}
	w := asWorkload(obj)
	if w == nil {
		return in, nil
	}
	state, err := templateHashState(w.revisionTemplate())
	if err != nil {
		return nil, err
	}
	// The cache keeps this (trimmed) object; the decoded one it replaces is released.
	tpl := w.podTemplate()
	*tpl = trimTemplate(tpl)
	if d, ok := obj.(*appsv1.Deployment); ok {
		d.Status.Conditions = replicaFailures(d.Status.Conditions)
	}
	ann := obj.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[AnnotationTemplateHashState] = sealState(obj, state)
	obj.SetAnnotations(ann)
	return obj, nil
}

// stripCacheMeta drops managedFields, kubectl's last-applied annotation and any
// AnnotationTemplateHashState not set by the cache.
func stripCacheMeta(obj client.Object) {
	obj.SetManagedFields(nil)
	ann := obj.GetAnnotations()
	_, applied := ann[corev1.LastAppliedConfigAnnotation]
	_, state := ann[AnnotationTemplateHashState]
	if applied || state {
		delete(ann, corev1.LastAppliedConfigAnnotation)
		delete(ann, AnnotationTemplateHashState)
		obj.SetAnnotations(ann)
	}
}

// replicaFailures keeps the ReplicaFailure conditions of a Deployment's status (the data-plane
// controller names why pods cannot be created): the only condition read of a Deployment that is
// not a primary (the primary's Progressing condition names its current ReplicaSet).
func replicaFailures(conds []appsv1.DeploymentCondition) []appsv1.DeploymentCondition {
	var out []appsv1.DeploymentCondition
	for _, c := range conds {
		if c.Type == appsv1.DeploymentReplicaFailure {
			out = append(out, appsv1.DeploymentCondition{Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message})
		}
	}
	return out
}

// trimTemplate keeps what the controllers read of a pod template (see above).
func trimTemplate(t *corev1.PodTemplateSpec) corev1.PodTemplateSpec {
	out := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: mesh.TemplateAnnotationsOf(t.Annotations)}}
	out.Spec.NodeSelector = t.Spec.NodeSelector
	out.Spec.InitContainers = trimContainers(t.Spec.InitContainers)
	out.Spec.Containers = trimContainers(t.Spec.Containers)
	for _, v := range t.Spec.Volumes {
		kept := corev1.Volume{Name: v.Name}
		switch {
		case v.ConfigMap != nil:
			kept.ConfigMap = &corev1.ConfigMapVolumeSource{LocalObjectReference: v.ConfigMap.LocalObjectReference, Optional: v.ConfigMap.Optional}
		case v.Secret != nil:
			kept.Secret = &corev1.SecretVolumeSource{SecretName: v.Secret.SecretName, Optional: v.Secret.Optional}
		case v.Projected != nil:
			p := &corev1.ProjectedVolumeSource{}
			for _, s := range v.Projected.Sources {
				switch {
				case s.ConfigMap != nil:
					p.Sources = append(p.Sources, corev1.VolumeProjection{ConfigMap: &corev1.ConfigMapProjection{
						LocalObjectReference: s.ConfigMap.LocalObjectReference, Optional: s.ConfigMap.Optional}})
				case s.Secret != nil:
					p.Sources = append(p.Sources, corev1.VolumeProjection{Secret: &corev1.SecretProjection{
						LocalObjectReference: s.Secret.LocalObjectReference, Optional: s.Secret.Optional}})
				}
			}
			if len(p.Sources) == 0 {
				continue
			}
			kept.Projected = p
		default:
			continue
		}
		out.Spec.Volumes = append(out.Spec.Volumes, kept)
	}
	return out
}

// trimContainers keeps each container's name, image, ports, restart policy and config references.
func trimContainers(cs []corev1.Container) []corev1.Container {
	if len(cs) == 0 {
		return nil
	}
	out := make([]corev1.Container, len(cs))
	for i, c := range cs {
		kept := corev1.Container{Name: c.Name, Image: c.Image, Ports: c.Ports, RestartPolicy: c.RestartPolicy, EnvFrom: c.EnvFrom}
		for _, e := range c.Env {
			if vf := e.ValueFrom; vf != nil && (vf.ConfigMapKeyRef != nil || vf.SecretKeyRef != nil) {
				kept.Env = append(kept.Env, corev1.EnvVar{Name: e.Name, ValueFrom: &corev1.EnvVarSource{
					ConfigMapKeyRef: vf.ConfigMapKeyRef, SecretKeyRef: vf.SecretKeyRef}})
			}
		}
		out[i] = kept
	}
	return out
}

// templateHashState is the state of revisionOf's hash after the template: SHA-256 over the
// beginning of the JSON revisionOf hashes, {"t":<template>.
func templateHashState(tpl *corev1.PodTemplateSpec) (string, error) {
	b, err := json.Marshal(tpl)
	if err != nil {
		return "", fmt.Errorf("encoding a pod template: %w", err)
	}
	h := sha256.New()
	h.Write([]byte(`{"t":`))
	h.Write(b)
	state, err := h.(encoding.BinaryMarshaler).MarshalBinary()
	if err != nil {
		return "", fmt.Errorf("saving the template hash: %w", err)
	}
	return base64.StdEncoding.EncodeToString(state), nil
}

// revisionFromState finishes revisionOf from the state templateHashState saved: the configs' part
// of the JSON, ,"c":<tracked>}, then the first 16 hex digits of the sum.
func revisionFromState(state string, tracked map[string]string) (string, error) {
	b, err := base64.StdEncoding.DecodeString(state)
	if err != nil {
		return "", fmt.Errorf("decoding a template hash state: %w", err)
	}
	h := sha256.New()
	if err := h.(encoding.BinaryUnmarshaler).UnmarshalBinary(b); err != nil {
		return "", fmt.Errorf("restoring a template hash state: %w", err)
	}
	c, err := json.Marshal(tracked)
	if err != nil {
		return "", fmt.Errorf("encoding the tracked configs: %w", err)
	}
	h.Write([]byte(`,"c":`))
	h.Write(c)
	h.Write([]byte(`}`))
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// templateStateOf is the hash state of w's revision template: the cache's
// AnnotationTemplateHashState on its trimmed copy, else computed from the template.
func templateStateOf(w workload) (string, error) {
	if s, ok := cachedState(w.obj()); ok {
		return s, nil
	}
	return templateHashState(w.revisionTemplate())
}

// wholeWorkload returns w with its whole pod template, provided that template is the one whose
// hash state is want (the one the tick observed): w itself when whole, else (the cache's trimmed
// copy) the workload read from the apiserver. errors: errTargetChanged when the template is
// another; API errors.
func (r *Reconciler) wholeWorkload(ctx context.Context, w workload, want string) (workload, error) {
	whole := w
	if _, trimmed := cachedState(w.obj()); trimmed {
		if r.APIReader == nil {
			return nil, errors.New("the cache holds trimmed workloads and the reconciler has no reader around it")
		}
		whole = newWorkload(w.kind())
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(w.obj()), whole.obj()); err != nil {
			return nil, fmt.Errorf("reading %s %s: %w", strings.ToLower(w.kind()), w.obj().GetName(), err)
		}
	}
	got, err := templateHashState(whole.revisionTemplate())
	if err != nil {
		return nil, err
	}
	if got != want {
		return nil, fmt.Errorf("%s %s: %w", strings.ToLower(w.kind()), w.obj().GetName(), errTargetChanged)
	}
	return whole, nil
}
