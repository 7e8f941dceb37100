package mesh

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// Linkerd's documented names.
const (
	// LinkerdProxyContainer is the name of the injected proxy container.
	LinkerdProxyContainer = "linkerd-proxy"
	// LinkerdProxyVersionAnnotation is set by the injector on every injected pod to the injected
	// proxy's version (what `linkerd version --proxy` reports).
	LinkerdProxyVersionAnnotation = "linkerd.io/proxy-version"
	// LinkerdPinAnnotation on a namespace or pod pins the proxy version the injector injects.
	LinkerdPinAnnotation = "config.linkerd.io/proxy-version"
	// LinkerdInject is the annotation (pods, namespaces) or label (namespaces) that enables
	// ("enabled", "ingress") or disables ("disabled") injection.
	LinkerdInject = "linkerd.io/inject"
	// LinkerdControlPlaneLabel marks Linkerd's control-plane namespace.
	LinkerdControlPlaneLabel = "linkerd.io/is-control-plane"
)

// Istio's documented names.
const (
	// IstioProxyContainer is the name of the injected sidecar.
	IstioProxyContainer = "istio-proxy"
	// IstioRevLabel on a namespace selects the istiod revision that injects its pods; on a pod it
	// names the revision that injected it.
	IstioRevLabel = "istio.io/rev"
	// IstioInjectionLabel "enabled" on a namespace injects with the default revision and wins
	// over istio.io/rev.
	IstioInjectionLabel = "istio-injection"
	// IstioSidecarInject "false" on a pod (label or annotation) opts it out of injection.
	IstioSidecarInject = "sidecar.istio.io/inject"
	// IstioSidecarStatus is the injector's record on a pod: JSON with the injected containers
	// and the revision.
	IstioSidecarStatus = "sidecar.istio.io/status"
	// IstioSystemNamespace is Istio's default control-plane namespace.
	IstioSystemNamespace = "istio-system"
)

// Proxy is the mesh proxy a pod runs.
type Proxy struct {
	// Container is the proxy container's name.
	Container string
	// Image is the proxy container's image reference.
	Image string
	// Version is what a DataPlane compares: the Linkerd proxy version, or the Istio revision.
	// Empty when unknown.
	Version string
}

// Detect returns the proxy of mesh m that pod runs: a container named linkerd-proxy or
// istio-proxy, or a native sidecar (an init container with restartPolicy Always) of that name.
// ok is false for pods without it and for pods opted out of injection.
func Detect(pod *corev1.Pod, m sluicev1.Mesh) (Proxy, bool) {
	if InjectionDisabled(pod, m) {
		return Proxy{}, false
	}
	name := ProxyContainer(m)
	if name == "" {
		return Proxy{}, false
	}
	c := findContainer(pod, name)
	if c == nil {
		return Proxy{}, false
	}
	p := Proxy{Container: c.Name, Image: c.Image}
	switch m {
	case sluicev1.MeshLinkerd:
		p.Version = linkerdVersion(pod, c)
	case sluicev1.MeshIstio:
		p.Version = IstioRevision(pod)
	}
	return p, true
}

// ProxyContainer is the proxy container name of mesh m, or "" for a mesh without sidecars.
func ProxyContainer(m sluicev1.Mesh) string {
	switch m {
	case sluicev1.MeshLinkerd:
		return LinkerdProxyContainer
	case sluicev1.MeshIstio:
		return IstioProxyContainer
	}
	return ""
}

func findContainer(pod *corev1.Pod, name string) *corev1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if c.Name == name && c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			return c
		}
	}
	return nil
}

// linkerdVersion is the injector's linkerd.io/proxy-version annotation (what Linkerd's own
// tooling reports), else the proxy image's tag, else "" (unknown).
func linkerdVersion(pod *corev1.Pod, c *corev1.Container) string {
	if v := pod.Annotations[LinkerdProxyVersionAnnotation]; v != "" {
		return v
	}
	return ImageVersion(c.Image)
}

// IstioRevision is the revision that injected pod: the "revision" of its sidecar.istio.io/status
// annotation, else its istio.io/rev label, else "" (unknown).
func IstioRevision(pod *corev1.Pod) string {
	if s := pod.Annotations[IstioSidecarStatus]; s != "" {
		var st struct {
			Revision string `json:"revision"`
		}
		if json.Unmarshal([]byte(s), &st) == nil && st.Revision != "" {
			return st.Revision
		}
	}
	return pod.Labels[IstioRevLabel]
}

// InjectionDisabled reports whether pod opted out of mesh m's injection
// (linkerd.io/inject: disabled; sidecar.istio.io/inject: "false" as label or annotation).
func InjectionDisabled(pod *corev1.Pod, m sluicev1.Mesh) bool {
	switch m {
	case sluicev1.MeshLinkerd:
		return pod.Annotations[LinkerdInject] == "disabled"
	case sluicev1.MeshIstio:
		return pod.Labels[IstioSidecarInject] == "false" || pod.Annotations[IstioSidecarInject] == "false"
	}
	return false
}

// Finished reports whether pod will never run again: phase Succeeded or Failed (evicted pods are
// Failed with reason Evicted).
func Finished(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// Terminating reports whether pod is being deleted.
func Terminating(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp != nil
}

// Live reports whether pod counts as running: neither finished nor being deleted.
func Live(pod *corev1.Pod) bool {
	return !Finished(pod) && !Terminating(pod)
}

// Ready reports whether pod's Ready condition is True.
func Ready(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
