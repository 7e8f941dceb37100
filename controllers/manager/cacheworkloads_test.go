package manager_test

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/canary"
	"sluice.dev/sluice/controllers/manager"
	"sluice.dev/sluice/test/testenv"
)

// TestPrimaryIsTheWholeTargetThroughTheTrimmedCache runs the manager, whose cache holds targets
// without their pod template's bodies, on a target with env values, resources, probes, a tracked
// ConfigMap volume and template annotations: the primary it builds, and the one it promotes after
// a new revision, run the target's whole template (selector labels suffixed -primary, the tracked
// ConfigMap renamed to its -primary copy), which only a read around the cache can give.
func TestPrimaryIsTheWholeTargetThroughTheTrimmedCache(t *testing.T) {
	testenv.Require(t, env)
	ctx := context.Background()
	ns := env.Namespace(t)
	create(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "web-config", Namespace: ns}, Data: map[string]string{"mode": "a"}})
	app(t, ns, "web", func(p *corev1.PodSpec) {
		c := &p.Containers[0]
		c.Env = []corev1.EnvVar{{Name: "MODE", Value: "blue"}, {Name: "POD", ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}
		c.Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}
		c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromInt32(9898)}}}
		c.VolumeMounts = []corev1.VolumeMount{{Name: "config", MountPath: "/etc/web"}}
		p.Volumes = []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "web-config"}}}}}
		p.TerminationGracePeriodSeconds = ptr.To[int64](7)
	})
	create(t, canaryFor(ns, "web"))
	mgr := startManager(t, nil, manager.Options{Namespaces: []string{ns}, DisableDataPlane: true})
	waitCanary(t, ns, "web", 60*time.Second, "Initialized", func(c *sluicev1.Canary) bool { return c.Status.Phase == sluicev1.CanaryPhaseInitialized })

	// The test has teeth: the manager's cache really holds the target trimmed.
	cached := &appsv1.Deployment{}
	if err := mgr.GetCache().Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, cached); err != nil {
		t.Fatal(err)
	}
	if c := cached.Spec.Template.Spec.Containers[0]; c.Env != nil || c.ReadinessProbe != nil || cached.Annotations[canary.AnnotationTemplateHashState] == "" {
		t.Fatalf("the manager's cache holds the target whole: %+v", cached.Spec.Template)
	}
	samePrimary(t, ns)

	// A new revision: image and an env value. Promoted, the primary runs it whole.
	d := &appsv1.Deployment{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, d); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(d.DeepCopy())
	d.Spec.Template.Spec.Containers[0].Image = "app:2"
	d.Spec.Template.Spec.Containers[0].Env[0].Value = "green"
	if err := env.Client.Patch(ctx, d, patch); err != nil {
		t.Fatal(err)
	}
	waitCanary(t, ns, "web", 60*time.Second, "Succeeded", func(c *sluicev1.Canary) bool { return c.Status.Phase == sluicev1.CanaryPhaseSucceeded })
	samePrimary(t, ns)
}

// samePrimary fails unless web-primary in ns runs web's whole template (selector labels suffixed
// -primary, the tracked ConfigMap web-config read from its -primary copy).
func samePrimary(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	target, primary := &appsv1.Deployment{}, &appsv1.Deployment{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, target); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web-primary"}, primary); err != nil {
		t.Fatal(err)
	}
	want := target.Spec.Template.DeepCopy()
	want.Labels["app"] = "web-primary"
	want.Spec.Volumes[0].ConfigMap.Name = "web-config-primary"
	if !equality.Semantic.DeepEqual(primary.Spec.Template, *want) {
		t.Fatalf("the primary's template is not the target's whole template:\n got %+v\nwant %+v", primary.Spec.Template, *want)
	}
}
