package chart

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"sluice.dev/sluice/test/helmchart"
	"sluice.dev/sluice/test/testenv"
)

// serviceMonitorCRD stands in for the Prometheus Operator's CRD, which envtest does not install:
// enough for the apiserver to know the kind (the test checks the ServiceMonitor's fields itself).
const serviceMonitorCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: servicemonitors.monitoring.coreos.com
spec:
  group: monitoring.coreos.com
  names: {kind: ServiceMonitor, listKind: ServiceMonitorList, plural: servicemonitors, singular: servicemonitor}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`

func installServiceMonitorCRD(ctx context.Context, t *testing.T) {
	t.Helper()
	crd := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(serviceMonitorCRD), &crd.Object); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, crd); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating the ServiceMonitor CRD: %v", err)
	}
}

// dryRun sends every object to the apiserver as a server-side dry run: a create, or for the CRDs
// testenv already installed, a server-side apply (which validates an update the same way).
func dryRun(ctx context.Context, t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	for _, o := range objs {
		o := o.DeepCopy()
		var err error
		// The ServiceMonitor CRD may take a moment to be served: retry "no such kind".
		deadline := time.Now().Add(30 * time.Second)
		for {
			if o.GetKind() == "CustomResourceDefinition" {
				err = env.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(o),
					client.FieldOwner("chart-test"), client.ForceOwnership, client.DryRunAll)
			} else {
				err = env.Client.Create(ctx, o, client.DryRunAll)
			}
			if err == nil || !isNoKind(err) || time.Now().After(deadline) {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		if err != nil {
			t.Errorf("dry run of %s %s/%s: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
	}
}

func isNoKind(err error) bool {
	return apierrors.IsNotFound(err) || runtime.IsNotRegisteredError(err) ||
		strings.Contains(err.Error(), "no matches for kind")
}

func TestEveryRenderedObjectPassesAServerSideDryRun(t *testing.T) {
	testenv.Require(t, env)
	ctx := context.Background()
	installServiceMonitorCRD(ctx, t)

	// The release namespace enforces the restricted Pod Security Standard.
	ns := env.Namespace(t)
	nsObj := &corev1.Namespace{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: ns}, nsObj); err != nil {
		t.Fatal(err)
	}
	nsObj.Labels["pod-security.kubernetes.io/enforce"] = "restricted"
	nsObj.Labels["pod-security.kubernetes.io/enforce-version"] = "latest"
	if err := env.Client.Update(ctx, nsObj); err != nil {
		t.Fatal(err)
	}
	watched := env.Namespace(t)

	for name, values := range map[string]map[string]any{
		"defaults": nil,
		"everything on": {
			"serviceMonitor":   map[string]any{"enabled": true},
			"grafanaDashboard": map[string]any{"enabled": true},
		},
		"watched namespaces": {"watchNamespaces": []any{watched}, "crds": map[string]any{"keep": false}},
	} {
		t.Run(name, func(t *testing.T) {
			r, err := helmchart.Render(helmchart.Release{Name: "sluice", Namespace: ns, Values: values})
			if err != nil {
				t.Fatal(err)
			}
			dryRun(ctx, t, r.Objects)
		})
	}

	// The manager's pod passes the restricted profile's admission (a Deployment only warns).
	r, err := helmchart.Render(helmchart.Release{Name: "sluice", Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	tmpl, _, _ := unstructured.NestedMap(r.Find("Deployment", "sluice").Object, "spec", "template")
	pod := &unstructured.Unstructured{Object: tmpl}
	pod.SetAPIVersion("v1")
	pod.SetKind("Pod")
	pod.SetNamespace(ns)
	pod.SetName("sluice-manager-dry-run")
	if err := env.Client.Create(ctx, pod, client.DryRunAll); err != nil {
		t.Errorf("the manager's pod is not admitted under the restricted Pod Security Standard: %v", err)
	}
	// The check has teeth: without the security contexts the same pod is refused.
	unstructured.RemoveNestedField(pod.Object, "spec", "securityContext")
	containers, _, _ := unstructured.NestedSlice(pod.Object, "spec", "containers")
	delete(containers[0].(map[string]any), "securityContext")
	_ = unstructured.SetNestedSlice(pod.Object, containers, "spec", "containers")
	if err := env.Client.Create(ctx, pod, client.DryRunAll); !apierrors.IsForbidden(err) {
		t.Errorf("a pod without security contexts was not refused by Pod Security admission: %v", err)
	}
}
