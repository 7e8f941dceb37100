package manager

import (
	"encoding/json"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/mesh"
)

// fullPod is a meshed pod as the apiserver returns it: proxy sidecar (as a native sidecar init
// container and as a container), annotations, owner, volumes, env, statuses.
func fullPod() *corev1.Pod {
	now := metav1.Now()
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-7d9f-abc", Namespace: "shop", UID: "u1", ResourceVersion: "42",
			Labels: map[string]string{"app": "web", "pod-template-hash": "7d9f", "istio.io/rev": "1-20"},
			Annotations: map[string]string{mesh.LinkerdProxyVersionAnnotation: "stable-2.14.1", "linkerd.io/inject": "enabled",
				mesh.IstioSidecarStatus: `{"revision":"1-21"}`, corev1.LastAppliedConfigAnnotation: `{"big":"json"}`},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d9f",
				Controller: ptr.To(true)}},
			ManagedFields:     []metav1.ManagedFieldsEntry{{Manager: "kubelet"}},
			DeletionTimestamp: &now,
		},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: mesh.LinkerdProxyContainer, Image: "cr.l5d.io/linkerd/proxy:stable-2.14.1",
				RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways), Env: []corev1.EnvVar{{Name: "A", Value: "b"}}}},
			Containers: []corev1.Container{
				{Name: "app", Image: "web:1", Ports: []corev1.ContainerPort{{ContainerPort: 80}},
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}},
				{Name: mesh.IstioProxyContainer, Image: "docker.io/istio/proxyv2:1.21.0"},
			},
			Volumes:  []corev1.Volume{{Name: "token", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			NodeName: "node-1",
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1",
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, Reason: "r", Message: "m",
				LastTransitionTime: now}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true, ImageID: "sha256:abc"}}},
	}
}

// TestTrimmedPodsAnswerTheMeshLikeWholeOnes: every question package mesh asks of a pod gets the
// same answer from the cache's trimmed copy, which keeps only a fraction of the pod.
func TestTrimmedPodsAnswerTheMeshLikeWholeOnes(t *testing.T) {
	variants := map[string]func(*corev1.Pod){
		"as is":          func(*corev1.Pod) {},
		"not running":    func(p *corev1.Pod) { p.Status.Phase, p.DeletionTimestamp = corev1.PodSucceeded, nil },
		"unready":        func(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionFalse },
		"no annotations": func(p *corev1.Pod) { p.Annotations = nil },
		"opted out": func(p *corev1.Pod) {
			p.Annotations["linkerd.io/inject"] = "disabled"
			p.Labels["sidecar.istio.io/inject"] = "false"
		},
		"plain init": func(p *corev1.Pod) { p.Spec.InitContainers[0].RestartPolicy = nil },
	}
	for name, mutate := range variants {
		whole := fullPod()
		mutate(whole)
		out, err := trimPod(whole.DeepCopy())
		if err != nil {
			t.Fatal(err)
		}
		trimmed := out.(*corev1.Pod)
		for _, m := range []sluicev1.Mesh{sluicev1.MeshLinkerd, sluicev1.MeshIstio} {
			pw, okw := mesh.Detect(whole, m)
			pt, okt := mesh.Detect(trimmed, m)
			if okw != okt || !equality.Semantic.DeepEqual(pw, pt) {
				t.Errorf("%s, %s: Detect gives %+v %v on the whole pod, %+v %v on the trimmed one", name, m, pw, okw, pt, okt)
			}
			if mesh.InjectionDisabled(whole, m) != mesh.InjectionDisabled(trimmed, m) {
				t.Errorf("%s, %s: InjectionDisabled differs", name, m)
			}
		}
		wr, wok := mesh.OwnerOf(whole)
		tr, tok := mesh.OwnerOf(trimmed)
		if mesh.Live(whole) != mesh.Live(trimmed) || mesh.Ready(whole) != mesh.Ready(trimmed) ||
			mesh.Finished(whole) != mesh.Finished(trimmed) || mesh.JobOwned(whole) != mesh.JobOwned(trimmed) ||
			mesh.IstioRevision(whole) != mesh.IstioRevision(trimmed) || wr != tr || wok != tok {
			t.Errorf("%s: Live/Ready/Finished/JobOwned/IstioRevision/OwnerOf differ between the whole and the trimmed pod", name)
		}
	}
	trimmed, _ := trimPod(fullPod())
	p := trimmed.(*corev1.Pod)
	if p.Spec.Volumes != nil || p.Spec.NodeName != "" || p.Status.PodIP != "" || p.Status.ContainerStatuses != nil ||
		p.ManagedFields != nil || p.Annotations[corev1.LastAppliedConfigAnnotation] != "" ||
		p.Spec.Containers[0].Ports != nil || p.Spec.InitContainers[0].Env != nil || p.Status.Conditions[0].Message != "" {
		t.Fatalf("trimmed pod still holds what nothing reads: %+v", p)
	}
	before, _ := json.Marshal(fullPod())
	after, _ := json.Marshal(p)
	t.Logf("pod JSON %d bytes whole, %d trimmed", len(before), len(after))
}

// TestEveryCachedObjectLosesManagedFieldsAndLastApplied, and nothing else, unless its kind is
// trimmed further (pods, namespaces, workloads, EndpointSlices, configs).
func TestEveryCachedObjectLosesManagedFieldsAndLastApplied(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web",
		Annotations:   map[string]string{corev1.LastAppliedConfigAnnotation: "{}", "keep": "me"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Port: 80}}}}
	want := svc.DeepCopy()
	want.ManagedFields = nil
	delete(want.Annotations, corev1.LastAppliedConfigAnnotation)
	out, err := stripForCache(svc)
	if err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(out, want) {
		t.Fatalf("stripped service differs beyond managedFields and last-applied:\n%+v\nwant\n%+v", out, want)
	}
	ns, _ := trimNamespace(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: map[string]string{"linkerd.io/inject": "enabled"}},
		Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"kubernetes"}}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}})
	if n := ns.(*corev1.Namespace); n.Labels["linkerd.io/inject"] != "enabled" || n.Spec.Finalizers != nil || n.Status.Phase != corev1.NamespaceTerminating {
		t.Fatalf("trimmed namespace: %+v", n)
	}
}

// TestTrimmedStatefulSetsAnswerTheMeshLikeWholeOnes: the data-plane controller, the only reader
// of StatefulSets, gets the same answers from the cache's trimmed copy (restart token, method,
// desired pods, rollout), which keeps no volume claim template and of the pod template only
// mesh's annotations and the containers' names and images.
func TestTrimmedStatefulSetsAnswerTheMeshLikeWholeOnes(t *testing.T) {
	for _, strategy := range []appsv1.StatefulSetUpdateStrategyType{appsv1.RollingUpdateStatefulSetStrategyType, appsv1.OnDeleteStatefulSetStrategyType} {
		whole := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "shop", Generation: 2,
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "helm"}}},
			Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](3), UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: strategy},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "db"},
					Annotations: map[string]string{mesh.RestartedAtAnnotation: "wave-2", "backup": "daily"}},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Image: "postgres:16", Env: []corev1.EnvVar{{Name: "PGDATA", Value: "/data"}},
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}}}}},
				VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}}},
			Status: appsv1.StatefulSetStatus{ObservedGeneration: 2, Replicas: 3, ReadyReplicas: 3, UpdatedReplicas: 3, CurrentRevision: "a", UpdateRevision: "a"}}
		out, err := trimStatefulSet(whole.DeepCopy())
		if err != nil {
			t.Fatal(err)
		}
		tr := out.(*appsv1.StatefulSet)
		wm, _ := mesh.Method(whole)
		tm, _ := mesh.Method(tr)
		if mesh.RestartToken(whole) != mesh.RestartToken(tr) || wm != tm || mesh.DesiredPods(whole) != mesh.DesiredPods(tr) ||
			mesh.RolledOut(whole) != mesh.RolledOut(tr) {
			t.Errorf("%s: package mesh reads the trimmed StatefulSet differently", strategy)
		}
		c := tr.Spec.Template.Spec.Containers[0]
		if tr.Spec.VolumeClaimTemplates != nil || c.Env != nil || c.Resources.Requests != nil || tr.ManagedFields != nil ||
			tr.Spec.Template.Annotations["backup"] != "" || tr.Spec.Template.Labels != nil || c.Image != "postgres:16" {
			t.Errorf("%s: trimmed StatefulSet keeps what nothing reads, or lost what mesh reads: %+v", strategy, tr.Spec)
		}
	}
}
