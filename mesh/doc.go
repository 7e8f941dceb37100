// Package mesh knows what a DataPlane needs to know about the meshes' data planes, as pure
// functions over Kubernetes objects:
//
//   - proxy detection (proxy.go): a pod is meshed when it really runs the proxy container
//     (linkerd-proxy, istio-proxy; native sidecars in initContainers included), not because of a
//     label; pods opted out of injection, finished pods (Succeeded, Failed, evicted), pods being
//     deleted and Job-owned pods do not count;
//   - versions (image.go, proxy.go): the Linkerd proxy version from linkerd.io/proxy-version or
//     the proxy image reference, parsed robustly (a registry with a port, a tag with a digest; a
//     digest alone or no tag is an unknown version); the Istio revision from the sidecar status
//     annotation or the istio.io/rev label;
//   - injection rules (namespace.go): Linkerd's config.linkerd.io/proxy-version pin and Istio's
//     istio.io/rev / istio-injection namespace labels;
//   - restart strategies per kind (workload.go, restart.go): a pod-template annotation for rolling
//     Deployments, DaemonSets and StatefulSets (what `kubectl rollout restart` does), evictions
//     one pod at a time through the Eviction API for OnDelete StatefulSets and DaemonSets, and an
//     Argo Rollouts Rollout's own spec.restartAt;
//   - scope (namespace.go): the namespaces a DataPlane never touches (kube-system, kube-public,
//     kube-node-lease, the control-plane namespace), which pods should run the proxy, Istio
//     revision tags;
//   - the control plane (controlplane.go): whether Linkerd's control-plane Deployments (and its
//     proxy injector) or a revision's istiod run the declared version and are available.
//
// Linkerd's and Istio's names are Linkerd's and Istio's documented annotation and label names,
// as constants (github.com/linkerd/linkerd2 is not importable here).
package mesh
