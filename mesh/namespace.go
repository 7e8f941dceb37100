package mesh

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// Pin is what decides the proxy version a namespace's new pods get, as far as a proxy upgrade
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

// ControlPlane reports whether ns holds mesh m's control plane, which a data-plane upgrade leaves
// to the control-plane upgrade: Linkerd's namespace labelled linkerd.io/is-control-plane=true,
// Istio's istio-system.
func ControlPlane(ns *corev1.Namespace, m sluicev1.Mesh) bool {
	switch m {
	case sluicev1.MeshLinkerd:
		return ns.Labels[LinkerdControlPlaneLabel] == "true"
	case sluicev1.MeshIstio:
		return ns.Name == IstioSystemNamespace
	}
	return false
}

// IstioSkipReason says why an Istio upgrade from previous to target cannot move ns by relabelling
// it: istio-injection=enabled (which wins over istio.io/rev), or an istio.io/rev that is neither
// revision. It returns "" when ns can be moved.
func IstioSkipReason(ns *corev1.Namespace, previous, target string) (reason, message string) {
	if ns.Labels[IstioInjectionLabel] == "enabled" {
		return sluicev1.ReasonIstioInjectionLabel, fmt.Sprintf(
			"namespace %s has %s=enabled, which wins over %s: replace it with %s=%s to upgrade it",
			ns.Name, IstioInjectionLabel, IstioRevLabel, IstioRevLabel, previous)
	}
	if rev := ns.Labels[IstioRevLabel]; rev != "" && rev != previous && rev != target {
		return sluicev1.ReasonUnknownRevision, fmt.Sprintf("namespace %s has %s=%s, neither %s nor %s",
			ns.Name, IstioRevLabel, rev, previous, target)
	}
	return "", ""
}
