package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// Labels the benchmark puts on what it creates.
const (
	labelBench     = "sluice.dev/bench"
	benchTarget    = "target"
	imageV1        = "ghcr.io/stefanprodan/podinfo:6.0.0"
	imageV2        = "ghcr.io/stefanprodan/podinfo:6.0.1"
	benchNamespace = "bench-%03d"
)

// app is one delivered application: namespace, name.
type app struct{ ns, name string }

func (a app) key() client.ObjectKey { return client.ObjectKey{Namespace: a.ns, Name: a.name} }

// apps lists n applications, perNamespace to a namespace.
func apps(n, perNamespace int) []app {
	out := make([]app, n)
	for i := range out {
		out[i] = app{ns: fmt.Sprintf(benchNamespace, i/perNamespace), name: fmt.Sprintf("app-%05d", i)}
	}
	return out
}

// namespaces lists the namespaces of as, in order.
func namespaces(as []app) []string {
	var out []string
	for i, a := range as {
		if i == 0 || as[i-1].ns != a.ns {
			out = append(out, a.ns)
		}
	}
	return out
}

// workload returns an application's ConfigMap and Deployment (replicas pods of podinfo reading the
// ConfigMap through envFrom, so it is a tracked config).
func workload(a app, replicas int32) (*corev1.ConfigMap, *appsv1.Deployment) {
	labels := map[string]string{"app": a.name}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: a.name + "-config", Namespace: a.ns},
		Data: map[string]string{"mode": "v1"}}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: a.name, Namespace: a.ns, Labels: map[string]string{labelBench: benchTarget}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "app", Image: imageV1,
					Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 9898}},
					EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
						LocalObjectReference: corev1.LocalObjectReference{Name: cm.Name}}}},
				}}},
			},
		},
	}
	return cm, dep
}

// canaryOf is the application's Canary: Gateway API provider (generated HTTPRoute), interval,
// stepWeight 10 up to maxWeight 50, no metrics. A check without metrics has no evidence, and the
// evidence rule holds such a step unless analysis.advanceWithoutData: set, so every step
// advances, each with its AdvancedWithoutData warning event (counted in the requests per run).
func canaryOf(a app, interval time.Duration, shardLabel string) *sluicev1.Canary {
	c := &sluicev1.Canary{
		ObjectMeta: metav1.ObjectMeta{Name: a.name, Namespace: a.ns},
		Spec: sluicev1.CanarySpec{
			TargetRef: sluicev1.TargetReference{APIVersion: "apps/v1", Kind: "Deployment", Name: a.name},
			Provider:  sluicev1.ProviderGatewayAPI,
			Service:   sluicev1.CanaryService{Port: 9898},
			Analysis: sluicev1.CanaryAnalysis{Interval: interval.String(), Threshold: 5, MaxWeight: maxWeight,
				StepWeight: stepWeight, AdvanceWithoutData: true},
		},
	}
	if shardLabel != "" {
		c.Labels = map[string]string{"sluice.dev/shard": shardLabel}
	}
	return c
}

// The Canaries' steps: 10, 20, 30, 40, 50.
const (
	stepWeight = 10
	maxWeight  = 50
	steps      = maxWeight / stepWeight
)

// forEach runs f for every app on workers goroutines and returns the first error.
func forEach(ctx context.Context, as []app, workers int, f func(context.Context, app) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	work := make(chan app)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for a := range work {
				if err := f(ctx, a); err != nil {
					cancel(err)
				}
			}
		})
	}
	for _, a := range as {
		select {
		case work <- a:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(work)
	wg.Wait()
	if err := context.Cause(ctx); err != nil && err != context.Canceled {
		return err
	}
	return nil
}

// setImage changes a target's image, which starts a canary run.
func setImage(ctx context.Context, c client.Client, a app, image string) error {
	d := appsv1ac.Deployment(a.name, a.ns).WithSpec(appsv1ac.DeploymentSpec().WithTemplate(
		corev1ac.PodTemplateSpec().WithSpec(corev1ac.PodSpec().WithContainers(
			corev1ac.Container().WithName("app").WithImage(image)))))
	if err := c.Apply(ctx, d, client.FieldOwner("sluice-bench"), client.ForceOwnership); err != nil {
		return fmt.Errorf("setting the image of %s: %w", a.key(), err)
	}
	return nil
}

// create creates obj, tolerating nothing.
func create(ctx context.Context, c client.Client, obj client.Object) error {
	if err := c.Create(ctx, obj); err != nil {
		return fmt.Errorf("creating %T %s/%s: %w", obj, obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}
