package mesh

import (
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// Control-plane names, as Linkerd and Istio document them.
const (
	// LinkerdNamespace is Linkerd's default control-plane namespace.
	LinkerdNamespace = "linkerd"
	// LinkerdComponentLabel names a Linkerd control-plane Deployment's component.
	LinkerdComponentLabel = "linkerd.io/control-plane-component"
	// LinkerdProxyInjector is the component that injects the proxy into new pods.
	LinkerdProxyInjector = "proxy-injector"
	// IstiodAppLabel value of the app label of istiod Deployments.
	IstiodApp = "istiod"
	// IstioTagLabel on a MutatingWebhookConfiguration names the revision tag it serves (its
	// istio.io/rev label names the revision the tag points to).
	IstioTagLabel = "istio.io/tag"
)

// LinkerdComponents are the control-plane components the data plane needs: a proxy is only as
// current as the destination and identity services it talks to and the injector that wrote it.
var LinkerdComponents = []string{"destination", "identity", LinkerdProxyInjector}

// DefaultControlPlaneNamespace is where mesh m's control plane runs by default.
func DefaultControlPlaneNamespace(m sluicev1.Mesh) string {
	if m == sluicev1.MeshIstio {
		return IstioSystemNamespace
	}
	return LinkerdNamespace
}

// ControlPlaneState is what the data plane may do given the control plane.
type ControlPlaneState struct {
	// Version the control plane runs ("" when none was found).
	Version string
	// Ready: it runs the declared version and every needed component is available.
	Ready bool
	// Message says what is missing when not Ready.
	Message string
	// InjectorAvailable: new pods get a proxy (Linkerd's injector; Istio: the istiod of every
	// revision a rollback may return to).
	InjectorAvailable bool
	// InjectorMessage says what is missing when not InjectorAvailable.
	InjectorMessage string
}

// TemplateVersion is the Linkerd version a control-plane pod template runs: its
// linkerd.io/proxy-version annotation, else the tag of its linkerd-proxy container, else the tag
// of its first container.
func TemplateVersion(t *corev1.PodTemplateSpec) string {
	if v := t.Annotations[LinkerdProxyVersionAnnotation]; v != "" {
		return v
	}
	for _, c := range t.Spec.Containers {
		if c.Name == LinkerdProxyContainer {
			return ImageVersion(c.Image)
		}
	}
	if len(t.Spec.Containers) > 0 {
		return ImageVersion(t.Spec.Containers[0].Image)
	}
	return ""
}

// DeploymentAvailable reports whether d has rolled out its current template and has every
// replica available; the message says what is missing.
func DeploymentAvailable(d *appsv1.Deployment) (bool, string) {
	want := ptr.Deref(d.Spec.Replicas, 1)
	s := d.Status
	switch {
	case want == 0:
		return false, fmt.Sprintf("%s/%s is scaled to 0", d.Namespace, d.Name)
	case s.ObservedGeneration < d.Generation || s.UpdatedReplicas < want || s.Replicas > want:
		return false, fmt.Sprintf("%s/%s is rolling out (%d of %d replicas updated)", d.Namespace, d.Name, s.UpdatedReplicas, want)
	case s.AvailableReplicas < want:
		return false, fmt.Sprintf("%s/%s has %d of %d replicas available", d.Namespace, d.Name, s.AvailableReplicas, want)
	}
	return true, ""
}

// LinkerdControlPlane checks the Deployments of Linkerd's control-plane namespace ns (those
// labelled linkerd.io/control-plane-component) against the declared version: every component in
// LinkerdComponents must exist, run version and be available.
func LinkerdControlPlane(deps []appsv1.Deployment, ns, version string) ControlPlaneState {
	byComponent := map[string]*appsv1.Deployment{}
	for i := range deps {
		if c := deps[i].Labels[LinkerdComponentLabel]; c != "" {
			byComponent[c] = &deps[i]
		}
	}
	var st ControlPlaneState
	var problems []string
	versions := map[string]bool{}
	for _, c := range LinkerdComponents {
		d := byComponent[c]
		if d == nil {
			problems = append(problems, fmt.Sprintf("no %s Deployment (label %s=%s) in namespace %s", c, LinkerdComponentLabel, c, ns))
			if c == LinkerdProxyInjector {
				st.InjectorMessage = fmt.Sprintf("the Linkerd proxy injector is missing from namespace %s", ns)
			}
			continue
		}
		v := TemplateVersion(&d.Spec.Template)
		versions[v] = true
		ok, why := DeploymentAvailable(d)
		if c == LinkerdProxyInjector {
			st.InjectorAvailable = ok
			if !ok {
				st.InjectorMessage = "proxy injector " + why
			}
		}
		switch {
		case !ok:
			problems = append(problems, why)
		case v != version:
			problems = append(problems, fmt.Sprintf("%s/%s runs %s, not %s", ns, d.Name, orUnknown(v), version))
		}
	}
	if len(versions) == 1 {
		for v := range versions {
			st.Version = v
		}
	} else if len(versions) > 1 {
		vs := make([]string, 0, len(versions))
		for v := range versions {
			vs = append(vs, orUnknown(v))
		}
		slices.Sort(vs)
		st.Version = strings.Join(vs, "+")
	}
	st.Ready = len(problems) == 0
	if !st.Ready {
		st.Message = fmt.Sprintf("Linkerd control plane is not ready for %s: %s", version, strings.Join(problems, "; "))
	}
	return st
}

// IstioControlPlane checks the istiod Deployments of namespace ns (label app=istiod, with
// istio.io/rev): the declared revision's istiod must exist and be available; rollback needs the
// istiod of each of the previous revisions.
func IstioControlPlane(deps []appsv1.Deployment, ns, revision string, previous []string) ControlPlaneState {
	byRevision := map[string]*appsv1.Deployment{}
	for i := range deps {
		d := &deps[i]
		if d.Labels["app"] != IstiodApp {
			continue
		}
		rev := d.Labels[IstioRevLabel]
		if rev == "" {
			rev = "default"
		}
		byRevision[rev] = d
	}
	check := func(rev string) (bool, string) {
		d := byRevision[rev]
		if d == nil {
			return false, fmt.Sprintf("no istiod Deployment for revision %s (labels app=istiod, %s=%s) in namespace %s", rev, IstioRevLabel, rev, ns)
		}
		return DeploymentAvailable(d)
	}
	var st ControlPlaneState
	ok, why := check(revision)
	if byRevision[revision] != nil {
		st.Version = revision
	}
	st.Ready = ok
	if !ok {
		st.Message = fmt.Sprintf("Istio control plane is not ready for revision %s: %s", revision, why)
	}
	st.InjectorAvailable = true
	var missing []string
	for _, rev := range previous {
		if ok, why := check(rev); !ok {
			missing = append(missing, why)
		}
	}
	if len(missing) > 0 {
		st.InjectorAvailable = false
		st.InjectorMessage = "istiod of a previous revision unavailable: " + strings.Join(missing, "; ")
	}
	return st
}

// Revisions returns the revisions that have an istiod Deployment among deps.
func Revisions(deps []appsv1.Deployment) map[string]bool {
	out := map[string]bool{}
	for _, d := range deps {
		if d.Labels["app"] == IstiodApp {
			rev := d.Labels[IstioRevLabel]
			if rev == "" {
				rev = "default"
			}
			out[rev] = true
		}
	}
	return out
}

func orUnknown(v string) string {
	if v == "" {
		return "an unknown version"
	}
	return v
}
