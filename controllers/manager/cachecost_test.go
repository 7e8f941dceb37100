package manager_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/manager"
)

// cacheCostObjects is how many objects of a kind each measurement caches.
const cacheCostObjects = 300

// podinfoDeployment is podinfo's own Deployment (its kustomize deployment.yaml: probes, resources,
// a command line, three ports, a volume), with the labels a Helm chart adds: a typical
// application, neither a toy nor an outlier.
func podinfoDeployment(ns, name string) *appsv1.Deployment {
	labels := map[string]string{"app.kubernetes.io/name": name, "app.kubernetes.io/instance": name, "app.kubernetes.io/version": "6.7.0",
		"app.kubernetes.io/managed-by": "Helm", "helm.sh/chart": "podinfo-6.7.0"}
	probe := func(path string) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{
			Command: []string{"podcli", "check", "http", "localhost:9898/" + path}}}, InitialDelaySeconds: 1, TimeoutSeconds: 5}
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels,
			Annotations: map[string]string{"meta.helm.sh/release-name": name, "meta.helm.sh/release-namespace": ns}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2), MinReadySeconds: 3, RevisionHistoryLimit: ptr.To[int32](5), ProgressDeadlineSeconds: ptr.To[int32](60),
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: ptr.To(intstr.FromInt32(0))}},
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": "9797"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "podinfod", Image: "ghcr.io/stefanprodan/podinfo:6.7.0", ImagePullPolicy: corev1.PullIfNotPresent,
					Command: []string{"./podinfo", "--port=9898", "--port-metrics=9797", "--grpc-port=9999", "--grpc-service-name=podinfo",
						"--level=info", "--random-delay=false", "--random-error=false"},
					Env: []corev1.EnvVar{{Name: "PODINFO_UI_COLOR", Value: "#34577c"}},
					Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 9898}, {Name: "http-metrics", ContainerPort: 9797},
						{Name: "grpc", ContainerPort: 9999}},
					LivenessProbe: probe("healthz"), ReadinessProbe: probe("readyz"),
					Resources: corev1.ResourceRequirements{
						Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2000m"), corev1.ResourceMemory: resource.MustParse("512Mi")},
						Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")}},
					VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
				}}, Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}},
			},
		},
	}
}

// deploymentStatus is what the Deployment controller writes on a rolled-out Deployment.
func deploymentStatus(name string) appsv1.DeploymentStatus {
	now := metav1.Now()
	return appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2,
		Conditions: []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable",
				Message: "Deployment has minimum availability.", LastUpdateTime: now, LastTransitionTime: now},
			{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable",
				Message: fmt.Sprintf("ReplicaSet %q has successfully progressed.", name+"-7d9f8b6c5d"), LastUpdateTime: now, LastTransitionTime: now},
		}}
}

// busyCanary is the sample Canary with three metrics (one a MetricTemplate), two webhooks and an
// alert, and the status of a run at its last step: a Canary near the largest status a run leaves.
func busyCanary(ns, name string) *sluicev1.Canary {
	return &sluicev1.Canary{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: sluicev1.CanarySpec{
			TargetRef: sluicev1.TargetReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name},
			Service:   sluicev1.CanaryService{Port: 9898},
			Analysis: sluicev1.CanaryAnalysis{Interval: "1m", Threshold: 5, MaxWeight: 50, StepWeight: 10,
				Metrics: []sluicev1.CanaryMetric{
					{Name: "request-success-rate", Interval: "1m", ThresholdRange: &sluicev1.ThresholdRange{Min: ptr.To(99.0)}},
					{Name: "request-duration", Interval: "1m", ThresholdRange: &sluicev1.ThresholdRange{Max: ptr.To(500.0)}},
					{Name: "error-ratio", TemplateRef: &sluicev1.CrossNamespaceObjectReference{Name: "error-ratio"},
						ThresholdRange: &sluicev1.ThresholdRange{Max: ptr.To(1.0)}},
				},
				Webhooks: []sluicev1.CanaryWebhook{
					{Name: "load-test", Type: sluicev1.WebhookRollout, URL: "http://flagger-loadtester.test/",
						Metadata: map[string]string{"cmd": "hey -z 1m -q 10 -c 2 http://" + name + "-canary." + ns + ":9898/"}},
					{Name: "confirm", Type: sluicev1.WebhookConfirmPromotion, URL: "http://gate.test/approve"},
				},
			},
		},
	}
}

// busyStatus is busyCanary's status at its last step.
func busyStatus(c *sluicev1.Canary) sluicev1.CanaryStatus {
	now := metav1.Now()
	result := func(name, value, rng string) sluicev1.MetricResult {
		return sluicev1.MetricResult{Name: name, Verdict: sluicev1.VerdictPass, Value: value, PrimaryValue: value, ThresholdRange: rng,
			Query: fmt.Sprintf(`sum(rate(http_requests_total{namespace=%q,pod=~"%s-[0-9a-zA-Z]+(-[0-9a-zA-Z]+)",status!~"5.."}[1m])) / sum(rate(http_requests_total{namespace=%q,pod=~"%s-[0-9a-zA-Z]+(-[0-9a-zA-Z]+)"}[1m])) * 100`,
				c.Namespace, c.Name, c.Namespace, c.Name),
			Window: "1m", WindowStart: &now, CheckedAt: &now}
	}
	return sluicev1.CanaryStatus{
		ObservedGeneration: 1, Phase: sluicev1.CanaryPhaseProgressing, CanaryWeight: 50, Iterations: 5,
		LastAppliedSpec: "5a1b2c3d4e5f6a7b", LastPromotedSpec: "0f1e2d3c4b5a6978",
		TrackedConfigs:     map[string]string{"configmap/podinfo-config": "9a8b7c6d5e4f3a2b"},
		LastTransitionTime: &now, LastStepTime: &now, LastProgressTime: &now, RunStartTime: &now, PreRolloutPassed: true,
		Analysis: []sluicev1.MetricResult{result("request-success-rate", "99.97", "[99, +Inf]"), result("request-duration", "212.4", "[-Inf, 500]"),
			result("error-ratio", "0.03", "[-Inf, 1]")},
		LastCheck: &sluicev1.CheckStatus{Time: now, Outcome: sluicev1.CheckPassed, WindowStart: &now},
		Webhooks: []sluicev1.WebhookStatus{{Name: "load-test", Type: sluicev1.WebhookRollout, Round: "5a1b2c3d4e5f6a7b/5", Passed: true, AnsweredAt: &now},
			{Name: "confirm", Type: sluicev1.WebhookConfirmPromotion, Round: "5a1b2c3d4e5f6a7b", Message: "waiting for approval", AnsweredAt: &now}},
		Conditions: []metav1.Condition{
			{Type: sluicev1.ConditionReady, Status: metav1.ConditionFalse, Reason: "Progressing", Message: "Advancing canary weight 50", LastTransitionTime: now},
			{Type: "Reconciling", Status: metav1.ConditionTrue, Reason: "Progressing", Message: "Advancing canary weight 50", LastTransitionTime: now},
		},
	}
}

// liveHeap is the live heap after full collections.
func liveHeap() uint64 {
	var m runtime.MemStats
	for range 3 {
		runtime.GC()
	}
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// cachedBytes starts a cache with opts limited to namespace ns, fills the informer of obj's kind,
// and returns the live heap it holds (after collections), and the cache's copy of one object.
func cachedBytes(t *testing.T, opts cache.Options, ns string, obj client.Object, sample client.Object) uint64 {
	t.Helper()
	opts.Scheme = env.Scheme
	opts.DefaultNamespaces = map[string]cache.Config{ns: {}}
	before := liveHeap()
	c, err := cache.New(env.Config, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = c.Start(ctx) }()
	if _, err := c.GetInformer(ctx, obj); err != nil {
		t.Fatal(err)
	}
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("cache did not sync")
	}
	if sample != nil {
		if err := c.Get(ctx, client.ObjectKeyFromObject(sample), sample); err != nil {
			t.Fatal(err)
		}
	}
	after := liveHeap()
	runtime.KeepAlive(c)
	return after - min(before, after)
}

// perObject is the live heap one cached object of obj's kind costs under opts: the heap of a cache
// of namespace full (cacheCostObjects objects) less that of a cache of the empty namespace empty.
func perObject(t *testing.T, opts func() cache.Options, full, empty string, obj client.Object) float64 {
	t.Helper()
	// The median of three runs each, against a collection's noise.
	runs := func(ns string) uint64 {
		var v [3]uint64
		for i := range v {
			v[i] = cachedBytes(t, opts(), ns, obj, nil)
		}
		a, b, c := v[0], v[1], v[2]
		return max(min(a, b), min(max(a, b), c))
	}
	return float64(int64(runs(full))-int64(runs(empty))) / cacheCostObjects
}

// TestCacheCostPerObject measures the live heap each cached Deployment and Canary costs the
// manager (go test -run TestCacheCostPerObject -v ./controllers/manager/ prints the figures
// docs/multi-tenancy.md gives): podinfo's Deployment cached as the manager caches it now and
// as it did with only managedFields and kubectl's last-applied annotation dropped, and a Canary
// with three metrics, two webhooks and a run's status. The Deployment costs less trimmed; the
// Canary is cached whole but for managedFields and last-applied: its status is the controller's
// memory, patched from the cached copy, so the cache keeps all of it.
func TestCacheCostPerObject(t *testing.T) {
	if testing.Short() {
		t.Skip("a measurement on envtest")
	}
	ctx := context.Background()
	full, empty := env.Namespace(t), env.Namespace(t)
	for i := range cacheCostObjects {
		name := fmt.Sprintf("podinfo-%03d", i)
		d := podinfoDeployment(full, name)
		create(t, d)
		d.Status = deploymentStatus(name)
		if err := env.Client.Status().Update(ctx, d); err != nil {
			t.Fatal(err)
		}
		c := busyCanary(full, name)
		create(t, c)
		c.Status = busyStatus(c)
		if err := env.Client.Status().Update(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	now := func() cache.Options { return manager.CacheOptions(manager.Options{}) }
	// The cache as it was: every object loses managedFields and kubectl's last-applied annotation.
	wholeOpts := func() cache.Options {
		return cache.Options{DefaultTransform: func(in any) (any, error) {
			if o, ok := in.(client.Object); ok {
				o.SetManagedFields(nil)
				if a := o.GetAnnotations(); a != nil {
					delete(a, corev1.LastAppliedConfigAnnotation)
				}
			}
			return in, nil
		}}
	}
	start := time.Now()
	whole := perObject(t, wholeOpts, full, empty, &appsv1.Deployment{})
	trimmed := perObject(t, now, full, empty, &appsv1.Deployment{})
	canaries := perObject(t, now, full, empty, &sluicev1.Canary{})
	t.Logf("live heap per cached object (%d of each, median of 3, %s): Deployment %.0f bytes whole, %.0f bytes trimmed (%.0f %% less); Canary %.0f bytes",
		cacheCostObjects, time.Since(start).Round(time.Second), whole, trimmed, 100*(1-trimmed/whole), canaries)
	if trimmed >= whole {
		t.Errorf("a trimmed Deployment costs %.0f bytes, a whole one %.0f", trimmed, whole)
	}

	// The cached Canary is the apiserver's, spec and status whole.
	name := "podinfo-000"
	live := &sluicev1.Canary{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: full, Name: name}, live); err != nil {
		t.Fatal(err)
	}
	cached := &sluicev1.Canary{ObjectMeta: metav1.ObjectMeta{Namespace: full, Name: name}}
	cachedBytes(t, now(), full, &sluicev1.Canary{}, cached)
	if !equality.Semantic.DeepEqual(cached.Spec, live.Spec) || !equality.Semantic.DeepEqual(cached.Status, live.Status) {
		t.Errorf("the cached Canary's spec or status differs from the apiserver's:\n%+v\nwant\n%+v", cached, live)
	}
}
