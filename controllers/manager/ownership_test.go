package manager_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/manager"
	"sluice.dev/sluice/test/testenv"
)

// TestUnownedObjectsLeftAlone: a Deployment "web-primary" and a ConfigMap "api-config-primary"
// that Sluice did not create (no ownership label) exist before their Canaries. Each Canary stalls
// naming the object; deleting the Canaries (revertOnDeletion) deletes what Sluice created and
// leaves both objects exactly as they were. (The apex Service is left alone while a Canary is
// stalled on a clash: TestNameClashTouchesNothing.)
func TestUnownedObjectsLeftAlone(t *testing.T) {
	testenv.Require(t, env)
	ctx := context.Background()
	ns := env.Namespace(t)
	app(t, ns, "web", nil)
	squatter := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web-primary", Namespace: ns, Labels: map[string]string{"team": "other"}},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "legacy"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "legacy"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "legacy", Image: "legacy:7"}}}}},
	}
	create(t, squatter,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "api-config", Namespace: ns}, Data: map[string]string{"mode": "new"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "api-config-primary", Namespace: ns}, Data: map[string]string{"mode": "someone else's"}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: ns},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "api"}, Ports: []corev1.ServicePort{{Port: 9898}}}})
	app(t, ns, "api", func(p *corev1.PodSpec) {
		p.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "api-config"}}}}
	})
	before := map[string]string{}
	for _, o := range []client.Object{&appsv1.Deployment{}, &corev1.ConfigMap{}} {
		name := map[bool]string{true: "web-primary", false: "api-config-primary"}[isDeployment(o)]
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, o); err != nil {
			t.Fatal(err)
		}
		before[name] = fingerprint(o)
	}
	create(t, canaryFor(ns, "web"), canaryFor(ns, "api"))
	startManager(t, nil, manager.Options{Namespaces: []string{ns}})

	waitCanary(t, ns, "web", 30*time.Second, "Stalled naming Deployment web-primary",
		stalledWith(sluicev1.ReasonNotOwned, "Deployment web-primary", "sluice.dev/canary=web"))
	waitCanary(t, ns, "api", 30*time.Second, "Stalled naming ConfigMap api-config-primary",
		stalledWith(sluicev1.ReasonNotOwned, "ConfigMap api-config-primary", "sluice.dev/canary=api"))
	time.Sleep(2 * time.Second) // more ticks

	for _, name := range []string{"web", "api"} {
		c := &sluicev1.Canary{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
		if err := env.Client.Delete(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, name := range []string{"web", "api"} {
		for {
			err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &sluicev1.Canary{})
			if apierrors.IsNotFound(err) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("canary %s not deleted: %v", name, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	for _, o := range []client.Object{&appsv1.Deployment{}, &corev1.ConfigMap{}} {
		name := map[bool]string{true: "web-primary", false: "api-config-primary"}[isDeployment(o)]
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, o); err != nil {
			t.Fatalf("%s was deleted: %v", name, err)
		}
		if got := fingerprint(o); got != before[name] {
			t.Fatalf("%s was modified:\n got %s\nwant %s", name, got, before[name])
		}
	}
	// What Sluice created for them is gone.
	for _, name := range []string{"web-canary", "api-canary", "api-primary"} {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &corev1.Service{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("Service %s that Sluice created is still there after deletion: %v", name, err)
		}
	}
}

// fingerprint is what Sluice could change of o: metadata and spec or data (a Deployment's status
// is the test's simulated Deployment controller's).
func fingerprint(o client.Object) string {
	var body any
	switch v := o.(type) {
	case *appsv1.Deployment:
		body = struct {
			Generation int64
			Spec       appsv1.DeploymentSpec
		}{v.Generation, v.Spec}
	case *corev1.ConfigMap:
		body = v.Data
	}
	b, _ := json.Marshal(struct {
		Labels, Annotations map[string]string
		Owners              []metav1.OwnerReference
		Body                any
	}{o.GetLabels(), o.GetAnnotations(), o.GetOwnerReferences(), body})
	return string(b)
}

func isDeployment(o client.Object) bool {
	_, ok := o.(*appsv1.Deployment)
	return ok
}

// TestNameClashTouchesNothing: a Canary whose names clash with objects Sluice did not create (an
// unowned web-primary Deployment, api-config-primary ConfigMap or db-canary Service) stalls
// before it writes anything: the existing apex Services keep their selectors (taking them over
// would point them at primary pods that never come, an outage), the targets keep their replicas
// and no -primary or -canary Service is created.
func TestNameClashTouchesNothing(t *testing.T) {
	testenv.Require(t, env)
	ctx := context.Background()
	ns := env.Namespace(t)
	apex := func(name string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": name}, Ports: []corev1.ServicePort{{Port: 9898}}}}
	}
	create(t, apex("web"), apex("api"), apex("db"),
		&appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "web-primary", Namespace: ns},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "legacy"}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "legacy"}},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "legacy", Image: "legacy:7"}}}}},
		},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "api-config", Namespace: ns}, Data: map[string]string{"mode": "new"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "api-config-primary", Namespace: ns}, Data: map[string]string{"mode": "someone else's"}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "db-canary", Namespace: ns},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "other"}, Ports: []corev1.ServicePort{{Port: 80}}}})
	app(t, ns, "web", nil)
	app(t, ns, "api", func(p *corev1.PodSpec) {
		p.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "api-config"}}}}
	})
	app(t, ns, "db", nil)
	create(t, canaryFor(ns, "web"), canaryFor(ns, "api"), canaryFor(ns, "db"))
	startManager(t, nil, manager.Options{Namespaces: []string{ns}})

	waitCanary(t, ns, "web", 30*time.Second, "Stalled naming Deployment web-primary",
		stalledWith(sluicev1.ReasonNotOwned, "Deployment web-primary"))
	waitCanary(t, ns, "api", 30*time.Second, "Stalled naming ConfigMap api-config-primary",
		stalledWith(sluicev1.ReasonNotOwned, "ConfigMap api-config-primary"))
	waitCanary(t, ns, "db", 30*time.Second, "Stalled naming Service db-canary",
		stalledWith(sluicev1.ReasonNotOwned, "Service db-canary"))
	time.Sleep(2 * time.Second) // more ticks

	for _, name := range []string{"web", "api", "db"} {
		svc := &corev1.Service{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, svc); err != nil {
			t.Fatal(err)
		}
		if got := svc.Spec.Selector["app"]; got != name {
			t.Errorf("apex Service %s selects app=%s after its Canary stalled on a name clash, want app=%s", name, got, name)
		}
		d := &appsv1.Deployment{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
			t.Fatal(err)
		}
		if d.Spec.Replicas == nil || *d.Spec.Replicas != 1 {
			t.Errorf("target %s scaled to %v after its Canary stalled on a name clash", name, d.Spec.Replicas)
		}
	}
	for _, name := range []string{"web-canary", "api-primary", "api-canary", "db-primary"} {
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &corev1.Service{}); !apierrors.IsNotFound(err) {
			t.Errorf("Service %s created although its Canary stalled on a name clash: %v", name, err)
		}
	}

	// Once the clash is gone, the Canary initializes and announces taking over the apex Service.
	if err := env.Client.Delete(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "db-canary", Namespace: ns}}); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, ns, "db", 30*time.Second, "Taking over Service db as the apex Service")
	waitCanary(t, ns, "db", 30*time.Second, "Initialized", func(c *sluicev1.Canary) bool {
		return c.Status.Phase == sluicev1.CanaryPhaseInitialized
	})
}

// TestDeleteCanaryLeavesForeignApexAlone: a Canary with revertOnDeletion that stalled before it
// took over the existing apex Service (here: a refused cross-namespace templateRef) is deleted:
// the deletion completes (it used to wait forever on "reading apex service") and the apex Service
// keeps its selector.
func TestDeleteCanaryLeavesForeignApexAlone(t *testing.T) {
	testenv.Require(t, env)
	ctx := context.Background()
	ns := env.Namespace(t)
	create(t, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Port: 9898}}}})
	app(t, ns, "web", nil)
	c := canaryFor(ns, "web")
	c.Spec.Analysis.Metrics = []sluicev1.CanaryMetric{{Name: "theirs", Interval: "1m",
		ThresholdRange: &sluicev1.ThresholdRange{Min: ptr.To(99.0)},
		TemplateRef:    &sluicev1.CrossNamespaceObjectReference{Name: "tpl", Namespace: "elsewhere"}}}
	create(t, c)
	startManager(t, nil, manager.Options{Namespaces: []string{ns}})
	waitCanary(t, ns, "web", 30*time.Second, "Stalled on the cross-namespace reference",
		stalledWith(sluicev1.ReasonCrossNamespaceRef, "elsewhere/tpl"))

	if err := env.Client.Delete(ctx, c); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, &sluicev1.Canary{})
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("canary web not deleted after 20s: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	svc := &corev1.Service{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, svc); err != nil {
		t.Fatal(err)
	}
	if svc.Spec.Selector["app"] != "web" || svc.Labels[sluicev1.LabelCanary] != "" {
		t.Errorf("apex Service changed: selector %v, labels %v", svc.Spec.Selector, svc.Labels)
	}
}
