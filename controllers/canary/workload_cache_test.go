package canary

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/mesh"
	"sluice.dev/sluice/test/testenv"
)

// richTemplate is an application's pod template as people write them: a sidecar, init
// containers, env values and references, resources, probes, every kind of volume, annotations.
func richTemplate() corev1.PodTemplateSpec {
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}},
		InitialDelaySeconds: 5, PeriodSeconds: 10}
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web", "tier": "front"},
			Annotations: map[string]string{mesh.RestartedAtAnnotation: "wave-1", "prometheus.io/scrape": "true",
				mesh.LinkerdProxyVersionAnnotation: "stable-2.14.1"}},
		Spec: corev1.PodSpec{
			ServiceAccountName: "web",
			NodeSelector:       map[string]string{"pool": "apps"},
			InitContainers: []corev1.Container{
				{Name: "migrate", Image: "web-migrate:1", Command: []string{"migrate", "--to=latest"},
					Env: []corev1.EnvVar{{Name: "DSN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
						LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "dsn"}}}}},
				{Name: "proxy", Image: "cr.l5d.io/linkerd/proxy:stable-2.14.1", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)},
			},
			Containers: []corev1.Container{{
				Name: "app", Image: "web:1", Args: []string{"--listen=:8080", "--html=<b>&amp;</b>"},
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}, {Name: "metrics", ContainerPort: 9090}},
				Env: []corev1.EnvVar{
					{Name: "MODE", Value: "production <&>"},
					{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
					{Name: "FLAG", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
						LocalObjectReference: corev1.LocalObjectReference{Name: "flags"}, Key: "flag", Optional: ptr.To(true)}}},
				},
				EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "web-env"}}}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")}},
				LivenessProbe: probe, ReadinessProbe: probe,
				VolumeMounts:    []corev1.VolumeMount{{Name: "config", MountPath: "/etc/web"}, {Name: "cache", MountPath: "/cache"}},
				SecurityContext: &corev1.SecurityContext{RunAsNonRoot: ptr.To(true), ReadOnlyRootFilesystem: ptr.To(true)},
			}},
			Volumes: []corev1.Volume{
				{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: "web-config"},
					Items:                []corev1.KeyToPath{{Key: "app.yaml", Path: "app.yaml"}}}}},
				{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "web-tls", Optional: ptr.To(true)}}},
				{Name: "bundle", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "ca"}}},
					{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "token"}}},
					{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "labels",
						FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}},
				}}}},
				{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("1Gi"))}}},
			},
			Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
				Weight: 100, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: "kubernetes.io/hostname",
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}}}},
		},
	}
}

// cachedMeta is the metadata of a workload as the apiserver returns it.
func cachedMeta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: "shop", UID: "u1", ResourceVersion: "42", Generation: 3,
		Labels:        map[string]string{"app": "web"},
		Annotations:   map[string]string{corev1.LastAppliedConfigAnnotation: `{"big":"json"}`, "team": "a"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}}
}

// wholeWorkloads are targets as the apiserver returns them: Deployments and DaemonSets, scaled
// and not.
func wholeWorkloads() map[string]workload {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	dep := func(replicas *int32) workload {
		return deployment{&appsv1.Deployment{ObjectMeta: cachedMeta("web"),
			Spec: appsv1.DeploymentSpec{Replicas: replicas, Selector: sel, Template: richTemplate(), MinReadySeconds: 5},
			Status: appsv1.DeploymentStatus{ObservedGeneration: 3, Replicas: 3, UpdatedReplicas: 3, ReadyReplicas: 2, AvailableReplicas: 2,
				Conditions: []appsv1.DeploymentCondition{
					{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable",
						Message: `ReplicaSet "web-7d9f" has successfully progressed.`, LastUpdateTime: metav1.Now()},
					{Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate",
						Message: `pods "web-7d9f-" is forbidden: exceeded quota`, LastUpdateTime: metav1.Now()},
				}}}}
	}
	ds := func(off bool) workload {
		d := &appsv1.DaemonSet{ObjectMeta: cachedMeta("agent"),
			Spec:   appsv1.DaemonSetSpec{Selector: sel, Template: richTemplate(), UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType}},
			Status: appsv1.DaemonSetStatus{DesiredNumberScheduled: 4, NumberReady: 4, UpdatedNumberScheduled: 4, ObservedGeneration: 3}}
		if off {
			daemonSet{d}.scaleTo(0)
		}
		return daemonSet{d}
	}
	bare := dep(ptr.To[int32](1))
	bare.podTemplate().Spec = corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "web:1"}}}
	bare.podTemplate().Annotations = nil
	return map[string]workload{
		"deployment": dep(ptr.To[int32](3)), "deployment at zero": dep(ptr.To[int32](0)), "deployment, default replicas": dep(nil),
		"bare deployment": bare, "daemonset": ds(false), "daemonset on no node": ds(true),
	}
}

// trimmed is the cache's copy of w.
func trimmed(t *testing.T, w workload) workload {
	t.Helper()
	out, err := TrimWorkload(w.copyWorkload().obj())
	if err != nil {
		t.Fatal(err)
	}
	return asWorkload(out.(client.Object))
}

// TestRevisionIsTheHashOfTemplateAndConfigs pins the revision format the status of every Canary
// holds (lastAppliedSpec, lastPromotedSpec, the primary's annotation): computed in two halves, it
// is still the first 16 hex digits of SHA-256 over {"t":<template>,"c":<tracked>}. Another value
// would start a run on every Canary after an upgrade.
func TestRevisionIsTheHashOfTemplateAndConfigs(t *testing.T) {
	bare := corev1.PodTemplateSpec{}
	for _, tpl := range []*corev1.PodTemplateSpec{ptr.To(richTemplate()), &bare, nil} {
		for _, tracked := range []map[string]string{nil, {}, {"configmap/web-config": "0badc0de", "secret/web-tls": "<&>"}} {
			want := checksum(struct {
				Template *corev1.PodTemplateSpec `json:"t"`
				Configs  map[string]string       `json:"c"`
			}{tpl, tracked})
			if got := revisionOf(tpl, tracked); got != want {
				t.Errorf("revisionOf = %s, want %s (template %v, tracked %v)", got, want, tpl != nil, tracked)
			}
		}
	}
}

// TestTrimmedWorkloadAnswersLikeWhole: every question the canary controller and package mesh ask
// of a target in the cache gets the same answer from the trimmed copy as from the whole object —
// the revision (with any tracked configs), the tracked configs, the discovered ports, the
// selector, replicas and rollout — while the trimmed copy holds none of the template's bodies.
func TestTrimmedWorkloadAnswersLikeWhole(t *testing.T) {
	canary := &sluicev1.Canary{Spec: sluicev1.CanarySpec{Service: sluicev1.CanaryService{Port: 80, PortDiscovery: true}}}
	for name, whole := range wholeWorkloads() {
		tr := trimmed(t, whole)
		for _, tracked := range []map[string]string{nil, {"configmap/web-config": "1", "secret/db": "2"}} {
			state, err := templateStateOf(tr)
			if err != nil {
				t.Fatal(err)
			}
			got, err := revisionFromState(state, tracked)
			if want := revisionOf(whole.revisionTemplate(), tracked); err != nil || got != want {
				t.Errorf("%s: revision from the cache %s (%v), from the whole object %s", name, got, err, want)
			}
		}
		if w, c := configRefs(&whole.podTemplate().Spec), configRefs(&tr.podTemplate().Spec); !equality.Semantic.DeepEqual(w, c) {
			t.Errorf("%s: tracked configs %v from the cache, %v from the whole object", name, c, w)
		}
		main := servicePort(canary)
		if w, c := discoveredPorts(canary, whole, main), discoveredPorts(canary, tr, main); !equality.Semantic.DeepEqual(w, c) {
			t.Errorf("%s: discovered ports %v from the cache, %v from the whole object", name, c, w)
		}
		ws, _ := primarySelector(whole)
		cs, _ := primarySelector(tr)
		if !equality.Semantic.DeepEqual(ws, cs) || !equality.Semantic.DeepEqual(whole.replicas(), tr.replicas()) ||
			whole.summary("r") != tr.summary("r") {
			t.Errorf("%s: selector, replicas or rollout differ between the cache's copy and the whole object", name)
		}
		wo, co := whole.obj(), tr.obj()
		if mesh.RestartToken(wo) != mesh.RestartToken(co) || mesh.DesiredPods(wo) != mesh.DesiredPods(co) || mesh.RolledOut(wo) != mesh.RolledOut(co) ||
			mesh.TemplateVersion(mesh.PodTemplate(wo)) != mesh.TemplateVersion(mesh.PodTemplate(co)) {
			t.Errorf("%s: package mesh reads the cache's copy differently", name)
		}
		if d, ok := wo.(*appsv1.Deployment); ok {
			// The data-plane controller names a ReplicaFailure; no other condition of a target is read.
			var want []string
			for _, c := range d.Status.Conditions {
				if c.Type == appsv1.DeploymentReplicaFailure {
					want = append(want, string(c.Status)+" "+c.Reason+" "+c.Message)
				}
			}
			var got []string
			for _, c := range co.(*appsv1.Deployment).Status.Conditions {
				got = append(got, string(c.Status)+" "+c.Reason+" "+c.Message)
			}
			if !equality.Semantic.DeepEqual(got, want) {
				t.Errorf("%s: cached conditions %q, want the ReplicaFailure ones %q", name, got, want)
			}
		}
		wm, _ := mesh.Method(wo)
		cm, _ := mesh.Method(co)
		if wm != cm {
			t.Errorf("%s: restart method %s from the cache, %s from the whole object", name, cm, wm)
		}
		spec := tr.podTemplate().Spec
		if co.GetManagedFields() != nil || co.GetAnnotations()[corev1.LastAppliedConfigAnnotation] != "" || co.GetAnnotations()["team"] != "a" {
			t.Errorf("%s: cached metadata %+v", name, co.GetAnnotations())
		}
		for _, c := range append(spec.InitContainers, spec.Containers...) {
			if c.Resources.Requests != nil || c.LivenessProbe != nil || c.Args != nil || c.Command != nil || c.VolumeMounts != nil || c.SecurityContext != nil {
				t.Errorf("%s: the cache keeps container %s's bodies: %+v", name, c.Name, c)
			}
			for _, e := range c.Env {
				if e.Value != "" || e.ValueFrom.FieldRef != nil {
					t.Errorf("%s: the cache keeps env %s of %s, which references no config", name, e.Name, c.Name)
				}
			}
		}
		if spec.Affinity != nil || spec.ServiceAccountName != "" || len(spec.Volumes) > 3 ||
			tr.podTemplate().Labels != nil || tr.podTemplate().Annotations["prometheus.io/scrape"] != "" {
			t.Errorf("%s: the cache keeps the pod spec's bodies: %+v", name, spec)
		}
		before, _ := json.Marshal(whole.obj())
		after, _ := json.Marshal(co)
		t.Logf("%s: JSON %d bytes whole, %d in the cache", name, len(before), len(after))
	}
}

// TestTrimmedTargetPatchesLikeWhole: Sluice writes a target only by scaling it, with a merge
// patch between two copies of the cached object; from the trimmed copy that patch is byte for
// byte the one computed from the whole object, so nothing the cache left out is ever written.
func TestTrimmedTargetPatchesLikeWhole(t *testing.T) {
	for name, whole := range wholeWorkloads() {
		tr := trimmed(t, whole)
		for _, n := range []int32{0, 2} {
			patchOf := func(w workload) string {
				w = w.copyWorkload()
				patch := client.MergeFrom(w.obj().DeepCopyObject().(client.Object))
				w.scaleTo(n)
				data, err := patch.Data(w.obj())
				if err != nil {
					t.Fatal(err)
				}
				return string(data)
			}
			if w, c := patchOf(whole), patchOf(tr); w != c {
				t.Errorf("%s, scaled to %d: patch %s from the cache, %s from the whole object", name, n, c, w)
			}
		}
	}
}

// TestPrimariesStayWholeInTheCache: Sluice's own workloads (labelled LabelCanary: the primaries,
// whose template promotion, rollback and restore points rewrite) are cached whole but for
// managedFields and kubectl's last-applied annotation, and a hash state annotation the cache did
// not set (a tenant's, however well formed) is never trusted nor kept; the cache's own copy,
// transformed again (an informer's relist), stays as it is.
func TestPrimariesStayWholeInTheCache(t *testing.T) {
	whole := wholeWorkloads()["deployment"].copyWorkload()
	primary := whole.copyWorkload()
	primary.obj().SetLabels(map[string]string{LabelCanary: "web"})
	primary.obj().GetAnnotations()[AnnotationTemplateHashState] = "forged"
	want := primary.copyWorkload().obj().(*appsv1.Deployment)
	want.ManagedFields = nil
	delete(want.Annotations, corev1.LastAppliedConfigAnnotation)
	delete(want.Annotations, AnnotationTemplateHashState)
	got := trimmed(t, primary).obj()
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("the cached primary differs from the whole one beyond managedFields and annotations:\n%+v\nwant\n%+v", got, want)
	}
	honest := trimmed(t, whole)
	forgedState, _ := templateHashState(&corev1.PodTemplateSpec{})
	for _, value := range []string{"forged", forgedState + ".AAAAAAAAAAAAAAAAAAAAAA", honest.obj().GetAnnotations()[AnnotationTemplateHashState]} {
		forged := whole.copyWorkload()
		forged.obj().GetAnnotations()[AnnotationTemplateHashState] = value
		if value == honest.obj().GetAnnotations()[AnnotationTemplateHashState] {
			// A copy of the cache's value on another object: its seal does not hold.
			forged.obj().SetUID("u2")
		}
		if _, ok := cachedState(forged.obj()); ok {
			t.Errorf("a hash state the cache did not set is trusted: %q", value)
		}
		got := trimmed(t, forged)
		want, _ := templateStateOf(deployment{whole.obj().(*appsv1.Deployment)})
		if s, _ := templateStateOf(got); s != want {
			t.Errorf("a forged hash state %q: the cache holds %q, want the template's %q", value, s, want)
		}
	}
	again := trimmed(t, honest)
	if !equality.Semantic.DeepEqual(again.obj(), honest.obj()) {
		t.Errorf("transformed again, the cache's copy changed:\n%+v\nwant\n%+v", again.obj(), honest.obj())
	}
	// A new version with a new status only: the cached copies differ in status alone, so the
	// target watch wakes only the Canaries that read a target's status.
	next := whole.copyWorkload().obj().(*appsv1.Deployment)
	next.ResourceVersion, next.Status.ReadyReplicas = "43", 3
	if !statusOnlyChange(honest.obj(), trimmed(t, deployment{next}).obj()) {
		t.Error("a status change of a cached target reads as a change of its spec or metadata")
	}
}

// TestWholeWorkloadIsTheObservedTemplate: building or promoting the primary from a trimmed target
// reads the target from the apiserver and uses it only when its template is the one the tick
// observed; a template changed since (in the apiserver, or in the object a write of the tick
// returned) is refused with errTargetChanged, and nothing is copied from it.
func TestWholeWorkloadIsTheObservedTemplate(t *testing.T) {
	testenv.Require(t, env)
	ctx := context.Background()
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: env.Namespace(t)},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: richTemplate()}}
	if err := env.Client.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	live := &appsv1.Deployment{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(d), live); err != nil {
		t.Fatal(err)
	}
	cached := trimmed(t, deployment{live})
	observed, err := templateStateOf(cached)
	if err != nil {
		t.Fatal(err)
	}
	r := &Reconciler{APIReader: env.Client}
	whole, err := r.wholeWorkload(ctx, cached, observed)
	if err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(whole.podTemplate(), &live.Spec.Template) {
		t.Fatalf("the whole target's template is not the apiserver's:\n%+v\nwant\n%+v", whole.podTemplate(), live.Spec.Template)
	}
	// A whole object returned by a write of the tick (a scale), with the observed template.
	if _, err := r.wholeWorkload(ctx, deployment{live}, observed); err != nil {
		t.Fatalf("the whole observed template refused: %v", err)
	}
	patch := client.MergeFrom(live.DeepCopy())
	live.Spec.Template.Spec.Containers[0].Env[0].Value = "staging"
	if err := env.Client.Patch(ctx, live, patch); err != nil {
		t.Fatal(err)
	}
	if _, err := r.wholeWorkload(ctx, cached, observed); !errors.Is(err, errTargetChanged) {
		t.Errorf("a template changed in the apiserver since the tick observed it: %v, want errTargetChanged", err)
	}
	if _, err := r.wholeWorkload(ctx, deployment{live}, observed); !errors.Is(err, errTargetChanged) {
		t.Errorf("a whole object with another template than the observed one: %v, want errTargetChanged", err)
	}
}
