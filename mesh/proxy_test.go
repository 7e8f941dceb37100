package mesh

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

func pod(mut ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-7d9c-abcde", Namespace: "ns-1", Labels: map[string]string{}, Annotations: map[string]string{}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "ghcr.io/stefanprodan/podinfo:6.7.1"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	for _, m := range mut {
		m(p)
	}
	return p
}

func withContainer(name, image string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: name, Image: image})
	}
}

func withAnnotation(k, v string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Annotations[k] = v }
}

func withLabel(k, v string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Labels[k] = v }
}

func TestDetect(t *testing.T) {
	l5d := sluicev1.MeshLinkerd
	istio := sluicev1.MeshIstio
	for _, tc := range []struct {
		name    string
		mesh    sluicev1.Mesh
		pod     *corev1.Pod
		meshed  bool
		version string
	}{
		{"linkerd annotation", l5d, pod(withContainer("linkerd-proxy", "cr.l5d.io/linkerd/proxy:edge-26.6.3"),
			withAnnotation("linkerd.io/proxy-version", "edge-26.6.3")), true, "edge-26.6.3"},
		{"linkerd annotation wins over image", l5d, pod(withContainer("linkerd-proxy", "cr.l5d.io/linkerd/proxy:custom-build"),
			withAnnotation("linkerd.io/proxy-version", "edge-26.8.3")), true, "edge-26.8.3"},
		{"linkerd image with port and digest, no annotation", l5d, pod(withContainer("linkerd-proxy",
			"registry.local:18080/linkerd/proxy:stable-2.10.2@"+digest)), true, "stable-2.10.2"},
		{"linkerd digest only is unknown", l5d, pod(withContainer("linkerd-proxy", "cr.l5d.io/linkerd/proxy@"+digest)), true, ""},
		{"linkerd native sidecar", l5d, pod(func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "linkerd-proxy", Image: "cr.l5d.io/linkerd/proxy:edge-26.8.3",
				RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)}}
		}), true, "edge-26.8.3"},
		{"plain init container named linkerd-proxy does not run alongside", l5d, pod(func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "linkerd-proxy", Image: "cr.l5d.io/linkerd/proxy:edge-26.8.3"}}
		}), false, ""},
		{"labels alone do not mesh a pod", l5d, pod(withLabel("linkerd.io/control-plane-ns", "linkerd"),
			withAnnotation("linkerd.io/proxy-version", "edge-26.8.3")), false, ""},
		{"injection disabled", l5d, pod(withContainer("linkerd-proxy", "cr.l5d.io/linkerd/proxy:edge-26.8.3"),
			withAnnotation("linkerd.io/inject", "disabled")), false, ""},
		{"istio proxy is not linkerd's", l5d, pod(withContainer("istio-proxy", "docker.io/istio/proxyv2:1.26.0")), false, ""},
		{"istio sidecar status", istio, pod(withContainer("istio-proxy", "docker.io/istio/proxyv2:1.27.1"),
			withLabel("istio.io/rev", "1-26-0"),
			withAnnotation("sidecar.istio.io/status", `{"initContainers":["istio-init"],"containers":["istio-proxy"],"revision":"1-27-1"}`)),
			true, "1-27-1"},
		{"istio rev label", istio, pod(withContainer("istio-proxy", "docker.io/istio/proxyv2:1.26.0"), withLabel("istio.io/rev", "1-26-0")),
			true, "1-26-0"},
		{"istio unknown revision", istio, pod(withContainer("istio-proxy", "docker.io/istio/proxyv2:1.26.0")), true, ""},
		{"istio opted out", istio, pod(withContainer("istio-proxy", "docker.io/istio/proxyv2:1.26.0"),
			withLabel("sidecar.istio.io/inject", "false")), false, ""},
		{"envoy has no sidecar", sluicev1.MeshEnvoy, pod(withContainer("istio-proxy", "x:1")), false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, ok := Detect(tc.pod, tc.mesh)
			if ok != tc.meshed || p.Version != tc.version {
				t.Errorf("Detect = %+v, %v; want meshed %v, version %q", p, ok, tc.meshed, tc.version)
			}
		})
	}
}

func TestLiveAndOwners(t *testing.T) {
	now := metav1.Now()
	ctrl := func(kind, name string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: name, Controller: ptr.To(true)}}
			if kind == "Job" {
				p.OwnerReferences[0].APIVersion = "batch/v1"
			}
		}
	}
	for _, tc := range []struct {
		name  string
		pod   *corev1.Pod
		live  bool
		owner WorkloadRef
		ok    bool
		job   bool
	}{
		{"deployment pod", pod(ctrl("ReplicaSet", "web-7d9c"), withLabel(appsv1.DefaultDeploymentUniqueLabelKey, "7d9c")), true,
			WorkloadRef{Kind: "Deployment", Name: "web"}, true, false},
		{"replicaset without the deployment naming", pod(ctrl("ReplicaSet", "web"), withLabel(appsv1.DefaultDeploymentUniqueLabelKey, "7d9c")), true,
			WorkloadRef{Kind: "ReplicaSet", Name: "web"}, true, false},
		{"statefulset pod", pod(ctrl("StatefulSet", "db")), true, WorkloadRef{Kind: "StatefulSet", Name: "db"}, true, false},
		{"daemonset pod", pod(ctrl("DaemonSet", "agent")), true, WorkloadRef{Kind: "DaemonSet", Name: "agent"}, true, false},
		{"job pod", pod(ctrl("Job", "migrate")), true, WorkloadRef{}, false, true},
		{"bare pod", pod(), true, WorkloadRef{}, false, false},
		{"succeeded", pod(func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }), false, WorkloadRef{}, false, false},
		{"evicted", pod(func(p *corev1.Pod) { p.Status.Phase, p.Status.Reason = corev1.PodFailed, "Evicted" }), false, WorkloadRef{}, false, false},
		{"terminating", pod(func(p *corev1.Pod) { p.DeletionTimestamp = &now }), false, WorkloadRef{}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if Live(tc.pod) != tc.live {
				t.Errorf("Live = %v", !tc.live)
			}
			owner, ok := OwnerOf(tc.pod)
			if owner != tc.owner || ok != tc.ok {
				t.Errorf("OwnerOf = %v, %v; want %v, %v", owner, ok, tc.owner, tc.ok)
			}
			if JobOwned(tc.pod) != tc.job {
				t.Errorf("JobOwned = %v", !tc.job)
			}
		})
	}
}

func TestMethodAndRolledOut(t *testing.T) {
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: 3}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2)},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 3, Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 2}}
	rolling := dep.DeepCopy()
	rolling.Status.Replicas = 3 // an old pod still running
	stale := dep.DeepCopy()
	stale.Status.ObservedGeneration = 2
	onDelete := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Generation: 1},
		Spec:   appsv1.StatefulSetSpec{Replicas: ptr.To[int32](2), UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: 1, Replicas: 2, ReadyReplicas: 2, CurrentRevision: "a", UpdateRevision: "b"}}
	rollingSTS := onDelete.DeepCopy()
	rollingSTS.Spec.UpdateStrategy.Type = appsv1.RollingUpdateStatefulSetStrategyType
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Generation: 1},
		Status: appsv1.DaemonSetStatus{ObservedGeneration: 1, DesiredNumberScheduled: 2, CurrentNumberScheduled: 2, NumberReady: 2, UpdatedNumberScheduled: 1}}
	dsOnDelete := ds.DeepCopy()
	dsOnDelete.Spec.UpdateStrategy.Type = appsv1.OnDeleteDaemonSetStrategyType
	for _, tc := range []struct {
		name      string
		obj       any
		method    sluicev1.RestartMethod
		rolledOut bool
	}{
		{"deployment", dep, sluicev1.RestartRollout, true},
		{"deployment with an old pod", rolling, sluicev1.RestartRollout, false},
		{"deployment not observed", stale, sluicev1.RestartRollout, false},
		{"ondelete statefulset (revisions differ, that is its normal state)", onDelete, sluicev1.RestartEvict, true},
		{"rolling statefulset mid-update", rollingSTS, sluicev1.RestartRollout, false},
		{"rolling daemonset mid-update", ds, sluicev1.RestartRollout, false},
		{"ondelete daemonset", dsOnDelete, sluicev1.RestartEvict, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			co := tc.obj.(client.Object)
			m, ok := Method(co)
			if !ok || m != tc.method {
				t.Errorf("Method = %v, %v; want %v", m, ok, tc.method)
			}
			if RolledOut(co) != tc.rolledOut {
				t.Errorf("RolledOut = %v, want %v", !tc.rolledOut, tc.rolledOut)
			}
		})
	}
}
