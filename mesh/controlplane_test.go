package mesh

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// cpDeployment is a control-plane Deployment running version with available replicas.
func cpDeployment(name string, labels map[string]string, version string, available int32) appsv1.Deployment {
	return appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "linkerd", Labels: labels, Generation: 1},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Template: corev1.PodTemplateSpec{
			Spec: corev1.PodSpec{Containers: []corev1.Container{
				{Name: name, Image: "cr.l5d.io/linkerd/controller:" + version},
				{Name: LinkerdProxyContainer, Image: "cr.l5d.io/linkerd/proxy:" + version},
			}}}},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 1, UpdatedReplicas: 1, AvailableReplicas: available},
	}
}

func linkerdCP(version string, injectorAvailable int32) []appsv1.Deployment {
	var out []appsv1.Deployment
	for _, c := range LinkerdComponents {
		avail := int32(1)
		if c == LinkerdProxyInjector {
			avail = injectorAvailable
		}
		out = append(out, cpDeployment("linkerd-"+c, map[string]string{LinkerdComponentLabel: c}, version, avail))
	}
	return out
}

func TestLinkerdControlPlane(t *testing.T) {
	for _, tc := range []struct {
		name     string
		deps     []appsv1.Deployment
		ready    bool
		injector bool
		version  string
		message  string
	}{
		{"every component on the declared version", linkerdCP("edge-26.8.3", 1), true, true, "edge-26.8.3", ""},
		{"control plane behind", linkerdCP("edge-26.6.3", 1), false, true, "edge-26.6.3",
			"linkerd/linkerd-destination runs edge-26.6.3, not edge-26.8.3"},
		{"injector down", linkerdCP("edge-26.8.3", 0), false, false, "edge-26.8.3",
			"linkerd/linkerd-proxy-injector has 0 of 1 replicas available"},
		{"injector missing", linkerdCP("edge-26.8.3", 1)[:2], false, false, "edge-26.8.3",
			"no proxy-injector Deployment (label linkerd.io/control-plane-component=proxy-injector) in namespace linkerd"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := LinkerdControlPlane(tc.deps, "linkerd", "edge-26.8.3")
			if st.Ready != tc.ready || st.InjectorAvailable != tc.injector || st.Version != tc.version || !strings.Contains(st.Message, tc.message) {
				t.Errorf("got %+v", st)
			}
		})
	}
}

func TestIstioControlPlane(t *testing.T) {
	istiod := func(rev string, avail int32) appsv1.Deployment {
		return cpDeployment("istiod-"+rev, map[string]string{"app": IstiodApp, IstioRevLabel: rev}, "1.27.1", avail)
	}
	st := IstioControlPlane([]appsv1.Deployment{istiod("1-26-0", 1), istiod("1-27-1", 1)}, "istio-system", "1-27-1", []string{"1-26-0"})
	if !st.Ready || !st.InjectorAvailable || st.Version != "1-27-1" {
		t.Errorf("both revisions up: %+v", st)
	}
	st = IstioControlPlane([]appsv1.Deployment{istiod("1-26-0", 1)}, "istio-system", "1-27-1", []string{"1-26-0"})
	if st.Ready || !strings.Contains(st.Message, "no istiod Deployment for revision 1-27-1") {
		t.Errorf("target revision missing: %+v", st)
	}
	st = IstioControlPlane([]appsv1.Deployment{istiod("1-26-0", 0), istiod("1-27-1", 1)}, "istio-system", "1-27-1", []string{"1-26-0"})
	if !st.Ready || st.InjectorAvailable || !strings.Contains(st.InjectorMessage, "istiod-1-26-0 has 0 of 1") {
		t.Errorf("previous revision down: %+v", st)
	}
}

func TestScopeAndRevisions(t *testing.T) {
	nsObj := func(name string, labels map[string]string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	}
	for _, name := range []string{"kube-system", "kube-public", "kube-node-lease", "linkerd"} {
		if Protected(nsObj(name, nil), sluicev1.MeshLinkerd, "linkerd") == "" {
			t.Errorf("%s not protected", name)
		}
	}
	if Protected(nsObj("viz", map[string]string{LinkerdControlPlaneLabel: "true"}), sluicev1.MeshLinkerd, "linkerd") == "" {
		t.Error("a labelled Linkerd control-plane namespace is not protected")
	}
	if Protected(nsObj("shop", nil), sluicev1.MeshIstio, "istio-system") != "" {
		t.Error("shop protected")
	}
	tags := map[string]string{"prod": "1-26-0"}
	if rev, tag := ResolveRevision("prod", tags); rev != "1-26-0" || tag != "prod" {
		t.Errorf("tag resolves to %s %s", rev, tag)
	}
	if rev, tag := ResolveRevision("1-27-1", tags); rev != "1-27-1" || tag != "" {
		t.Errorf("revision resolves to %s %s", rev, tag)
	}
	revs := map[string]bool{"1-26-0": true, "1-27-1": true}
	if r, _ := IstioSkipReason(nsObj("a", map[string]string{IstioRevLabel: "prod"}), revs, tags); r != "" {
		t.Errorf("tagged namespace skipped: %s", r)
	}
	if r, _ := IstioSkipReason(nsObj("a", map[string]string{IstioRevLabel: "canary"}), revs, tags); r != sluicev1.ReasonUnknownRevision {
		t.Errorf("unknown revision: %q", r)
	}
	if r, _ := IstioSkipReason(nsObj("a", map[string]string{IstioInjectionLabel: "enabled"}), revs, tags); r != sluicev1.ReasonIstioInjectionLabel {
		t.Errorf("istio-injection: %q", r)
	}
}

func TestExpectsProxyAndRolloutOwner(t *testing.T) {
	bare := pod()
	if ExpectsProxy(bare, sluicev1.MeshLinkerd, false) {
		t.Error("a pod in a namespace without injection expects a proxy")
	}
	if !ExpectsProxy(bare, sluicev1.MeshLinkerd, true) {
		t.Error("a pod in an injected namespace does not expect a proxy")
	}
	if ExpectsProxy(pod(withAnnotation(LinkerdInject, "disabled")), sluicev1.MeshLinkerd, true) {
		t.Error("an opted-out pod expects a proxy")
	}
	if !ExpectsProxy(pod(withAnnotation(LinkerdInject, "enabled")), sluicev1.MeshLinkerd, false) {
		t.Error("a pod asking for injection does not expect a proxy")
	}
	p := pod(withLabel(RolloutPodTemplateHashLabel, "6c9f"), func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "shop-6c9f", Controller: ptr.To(true)}}
	})
	if ref, ok := OwnerOf(p); !ok || ref != (WorkloadRef{Kind: KindRollout, Name: "shop"}) {
		t.Errorf("rollout pod owner %v %v", ref, ok)
	}
	u := NewRollout()
	u.SetGeneration(2)
	u.Object["spec"] = map[string]any{"replicas": int64(2), "restartAt": "2026-11-30T12:00:00Z"}
	u.Object["status"] = map[string]any{"observedGeneration": "2", "replicas": int64(2), "updatedReplicas": int64(2), "availableReplicas": int64(2)}
	if RolledOut(u) || RestartToken(u) != "2026-11-30T12:00:00Z" {
		t.Error("a rollout whose restart is not done yet counts as rolled out")
	}
	u.Object["status"].(map[string]any)["restartedAt"] = "2026-11-30T12:00:00Z"
	if m, _ := Method(u); !RolledOut(u) || m != sluicev1.RestartAt || DesiredPods(u) != 2 {
		t.Errorf("rolled out %v method %s desired %d", RolledOut(u), m, DesiredPods(u))
	}
}
