package scale

import (
	"context"
	"fmt"
	"runtime"
	"time"

	dto "github.com/prometheus/client_model/go"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// unreachableMetricsServer is the manager's default Prometheus. The Canaries here have no
// metrics, so nothing ever queries it: idle Canaries never analyse, and a run's checks pass with
// nothing to evaluate.
const unreachableMetricsServer = "http://127.0.0.1:9"

// app returns the objects of one delivered application: a ConfigMap, a one-replica Deployment
// reading it through envFrom (so it is a tracked config), and a Canary on the Gateway API provider
// (generated HTTPRoute) with the seed's steps (stepWeight 10, maxWeight 50) at interval and no
// metrics.
func app(ns, name string, interval time.Duration) (*corev1.ConfigMap, *appsv1.Deployment, *sluicev1.Canary) {
	labels := map[string]string{"app": name}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name + "-config", Namespace: ns},
		Data: map[string]string{"mode": "v1"}}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "app", Image: "ghcr.io/stefanprodan/podinfo:6.0.0",
					Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 9898}},
					EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
						LocalObjectReference: corev1.LocalObjectReference{Name: cm.Name}}}},
				}}},
			},
		},
	}
	cn := &sluicev1.Canary{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: sluicev1.CanarySpec{
			TargetRef: sluicev1.TargetReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name},
			Provider:  sluicev1.ProviderGatewayAPI,
			Service:   sluicev1.CanaryService{Port: 9898},
			Analysis: sluicev1.CanaryAnalysis{Interval: interval.String(), Threshold: 5, MaxWeight: 50,
				StepWeight: 10, AdvanceWithoutData: true}, // no metrics: the runs measure the engine, not analysis
		},
	}
	return cm, dep, cn
}

// createApp creates app's objects through c.
func createApp(ctx context.Context, c client.Client, ns, name string, interval time.Duration) error {
	cm, dep, cn := app(ns, name, interval)
	for _, o := range []client.Object{cm, dep, cn} {
		if err := c.Create(ctx, o); err != nil {
			return fmt.Errorf("creating %T %s/%s: %w", o, ns, o.GetName(), err)
		}
	}
	return nil
}

// setImage changes a Deployment's image, which starts a canary run.
func setImage(ctx context.Context, c client.Client, ns, name, image string) error {
	d := &appsv1.Deployment{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
		return err
	}
	patch := client.MergeFrom(d.DeepCopy())
	d.Spec.Template.Spec.Containers[0].Image = image
	return c.Patch(ctx, d, patch)
}

// memStats is the live heap and goroutines after a full collection.
type memStats struct {
	heapInuse, heapAlloc uint64
	heapObjects          uint64
	goroutines           int
}

func readMem() memStats {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return memStats{heapInuse: m.HeapInuse, heapAlloc: m.HeapAlloc, heapObjects: m.HeapObjects,
		goroutines: runtime.NumGoroutine()}
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// reconcileStats are the canary controller's counters from controller-runtime's metrics registry.
type reconcileStats struct {
	reconciles, errors float64 // controller_runtime_reconcile_total (all results; result="error")
	reconcileSeconds   float64 // sum of controller_runtime_reconcile_time_seconds
	queueWaits         float64 // count of workqueue_queue_duration_seconds
	queueSeconds       float64 // sum of workqueue_queue_duration_seconds
	queueDepth         float64 // workqueue_depth now
}

func readReconcileStats() (reconcileStats, error) {
	families, err := metrics.Registry.Gather()
	if err != nil {
		return reconcileStats{}, err
	}
	var s reconcileStats
	for _, f := range families {
		for _, m := range f.GetMetric() {
			if !hasLabel(m, "controller", "canary") && !hasLabel(m, "name", "canary") {
				continue
			}
			switch f.GetName() {
			case "controller_runtime_reconcile_total":
				s.reconciles += m.GetCounter().GetValue()
				if hasLabel(m, "result", "error") {
					s.errors += m.GetCounter().GetValue()
				}
			case "controller_runtime_reconcile_time_seconds":
				s.reconcileSeconds += m.GetHistogram().GetSampleSum()
			case "workqueue_queue_duration_seconds":
				s.queueWaits += float64(m.GetHistogram().GetSampleCount())
				s.queueSeconds += m.GetHistogram().GetSampleSum()
			case "workqueue_depth":
				s.queueDepth += m.GetGauge().GetValue()
			}
		}
	}
	return s, nil
}

// since returns the counters' growth from before (the depth is now's).
func (s reconcileStats) since(before reconcileStats) reconcileStats {
	return reconcileStats{
		reconciles: s.reconciles - before.reconciles, errors: s.errors - before.errors,
		reconcileSeconds: s.reconcileSeconds - before.reconcileSeconds,
		queueWaits:       s.queueWaits - before.queueWaits, queueSeconds: s.queueSeconds - before.queueSeconds,
		queueDepth: s.queueDepth,
	}
}

func (s reconcileStats) String() string {
	avg := func(sum, n float64) time.Duration {
		if n == 0 {
			return 0
		}
		return time.Duration(sum / n * float64(time.Second)).Round(time.Microsecond)
	}
	return fmt.Sprintf("%.0f reconciles (%.0f errors), mean reconcile %s, mean queue wait %s, queue depth %.0f",
		s.reconciles, s.errors, avg(s.reconcileSeconds, s.reconciles), avg(s.queueSeconds, s.queueWaits), s.queueDepth)
}

func hasLabel(m *dto.Metric, name, value string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == name && l.GetValue() == value {
			return true
		}
	}
	return false
}
