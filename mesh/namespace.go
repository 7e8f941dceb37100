package mesh

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// Pin is what decides the proxy version a namespace's new pods get, as far as a DataPlane
// controls it: Linkerd's config.linkerd.io/proxy-version annotation, or Istio's istio.io/rev
// label. "" means unset.
func Pin(ns *corev1.Namespace, m sluicev1.Mesh) string {
	switch m {
	case sluicev1.MeshLinkerd:
		return ns.Annotations[LinkerdPinAnnotation]
	case sluicev1.MeshIstio:
		return ns.Labels[IstioRevLabel]
	}
	return ""
}

// PinPatch returns a merge patch that sets a namespace's pin (see Pin) to v.
func PinPatch(m sluicev1.Mesh, v string) client.Patch {
	field := "annotations"
	key := LinkerdPinAnnotation
	if m == sluicev1.MeshIstio {
		field, key = "labels", IstioRevLabel
	}
	body, _ := json.Marshal(map[string]any{"metadata": map[string]any{field: map[string]string{key: v}}})
	return client.RawPatch(types.MergePatchType, body)
}

// InjectionEnabled reports whether mesh m injects new pods of ns: Linkerd's linkerd.io/inject
// enabled or ingress (annotation or label); Istio's istio.io/rev set or istio-injection=enabled.
func InjectionEnabled(ns *corev1.Namespace, m sluicev1.Mesh) bool {
	switch m {
	case sluicev1.MeshLinkerd:
		for _, v := range []string{ns.Annotations[LinkerdInject], ns.Labels[LinkerdInject]} {
			if v == "enabled" || v == "ingress" {
				return true
			}
		}
	case sluicev1.MeshIstio:
		return ns.Labels[IstioRevLabel] != "" || ns.Labels[IstioInjectionLabel] == "enabled"
	}
	return false
}

// Namespaces a DataPlane never pins or restarts, whatever its selector says.
var protectedNamespaces = map[string]bool{"kube-system": true, "kube-public": true, "kube-node-lease": true}

// Protected reports why ns is never pinned or restarted ("" when it may be): a Kubernetes system
// namespace, or the mesh's control-plane namespace (cpNamespace, or a namespace Linkerd labels as
// its control plane).
func Protected(ns *corev1.Namespace, m sluicev1.Mesh, cpNamespace string) string {
	switch {
	case protectedNamespaces[ns.Name]:
		return fmt.Sprintf("namespace %s is a Kubernetes system namespace: a DataPlane never pins or restarts it", ns.Name)
	case ns.Name == cpNamespace:
		return fmt.Sprintf("namespace %s runs the %s control plane: a DataPlane never pins or restarts it", ns.Name, m)
	case m == sluicev1.MeshLinkerd && ns.Labels[LinkerdControlPlaneLabel] == "true":
		return fmt.Sprintf("namespace %s is labelled %s=true (a Linkerd control plane): a DataPlane never pins or restarts it",
			ns.Name, LinkerdControlPlaneLabel)
	}
	return ""
}

// IstioSkipReason reports why an Istio namespace's revision cannot be moved by relabelling it: it
// uses istio-injection=enabled (which wins over istio.io/rev), or its istio.io/rev names neither a
// revision with an istiod (revisions) nor a revision tag (tags).
func IstioSkipReason(ns *corev1.Namespace, revisions map[string]bool, tags map[string]string) (reason, message string) {
	if ns.Labels[IstioInjectionLabel] == "enabled" {
		return sluicev1.ReasonIstioInjectionLabel, fmt.Sprintf(
			"namespace %s has %s=enabled, which wins over %s: replace it with %s=<revision> to let the DataPlane move it",
			ns.Name, IstioInjectionLabel, IstioRevLabel, IstioRevLabel)
	}
	if rev := ns.Labels[IstioRevLabel]; rev != "" && !revisions[rev] && tags[rev] == "" {
		return sluicev1.ReasonUnknownRevision, fmt.Sprintf("namespace %s has %s=%s, which is neither a revision with an istiod nor a revision tag",
			ns.Name, IstioRevLabel, rev)
	}
	return "", ""
}

// ResolveRevision returns the revision an istio.io/rev value selects: the value itself, or, when
// it is a revision tag, the revision the tag's webhook serves (and the tag).
func ResolveRevision(value string, tags map[string]string) (revision, tag string) {
	if rev, ok := tags[value]; ok && rev != "" {
		return rev, value
	}
	return value, ""
}

// ExpectsProxy reports whether a running pod without the proxy should have it: it is neither a
// Job pod nor opted out, and its namespace asks for injection (namespaceInjection) or the pod
// itself does (Linkerd: annotation linkerd.io/inject=enabled; Istio: label istio.io/rev or
// sidecar.istio.io/inject=true).
func ExpectsProxy(pod *corev1.Pod, m sluicev1.Mesh, namespaceInjection bool) bool {
	if JobOwned(pod) || InjectionDisabled(pod, m) || !Live(pod) {
		return false
	}
	if namespaceInjection {
		return true
	}
	switch m {
	case sluicev1.MeshLinkerd:
		return pod.Annotations[LinkerdInject] == "enabled"
	case sluicev1.MeshIstio:
		return pod.Labels[IstioRevLabel] != "" || pod.Labels[IstioSidecarInject] == "true"
	}
	return false
}

// UnpinPatch removes a Linkerd namespace's pin (config.linkerd.io/proxy-version): its new pods
// then get the control plane's version.
func UnpinPatch() client.Patch {
	body, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{LinkerdPinAnnotation: nil}}})
	return client.RawPatch(types.MergePatchType, body)
}
