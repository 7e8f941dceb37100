package chart

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/manager"
	"sluice.dev/sluice/test/helmchart"
	"sluice.dev/sluice/test/testenv"
)

// TestManagerRunsWithOnlyTheChartsRBAC installs the chart's ServiceAccount and RBAC, runs the real
// manager impersonating that ServiceAccount (leader election on, in the release namespace), and
// drives the seed's Canary through a whole rollout: the chart grants everything the controller
// needs and nothing is done with other credentials.
func TestManagerRunsWithOnlyTheChartsRBAC(t *testing.T) {
	if env == nil {
		t.Skip("needs envtest")
	}
	release := env.Namespace(t)
	app := env.Namespace(t)
	runRolloutWithChartRBAC(t, release, app, nil, manager.Options{})
}

// TestNamespaceScopedManagerRunsWithOnlyTheChartsRBAC installs the chart with watchNamespaces
// (RoleBindings in the watched namespace, nothing cluster-wide but the /metrics review rights, the
// data-plane controller off) and runs the same rollout as the ServiceAccount: the manager starts
// and completes it, and really cannot read Deployments outside its namespace.
func TestNamespaceScopedManagerRunsWithOnlyTheChartsRBAC(t *testing.T) {
	if env == nil {
		t.Skip("needs envtest")
	}
	release := env.Namespace(t)
	app := env.Namespace(t)
	limited := runRolloutWithChartRBAC(t, release, app, map[string]any{"watchNamespaces": []any{app}},
		manager.Options{Namespaces: []string{app}, DisableDataPlane: true})
	if err := limited.List(context.Background(), &appsv1.DeploymentList{}, client.InNamespace(release)); !apierrors.IsForbidden(err) {
		t.Fatalf("listing Deployments of another namespace as the namespace-scoped ServiceAccount: %v, want Forbidden", err)
	}
}

// runRolloutWithChartRBAC installs the chart's ServiceAccount and RBAC rendered with values in
// release, runs the real manager impersonating that ServiceAccount (leader election on, in the
// release namespace, plus o) and drives the seed's Canary in app through a whole rollout. It
// returns a client acting as the ServiceAccount.
func runRolloutWithChartRBAC(t *testing.T, release, app string, values map[string]any, o manager.Options) client.Client {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, err := helmchart.Render(helmchart.Release{Name: "sluice", Namespace: release, Values: values})
	if err != nil {
		t.Fatal(err)
	}
	var sa string
	for _, kind := range []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"} {
		for _, o := range out.OfKind(kind) {
			o = o.DeepCopy()
			if kind == "ServiceAccount" {
				sa = o.GetName()
			}
			if err := env.Client.Create(ctx, o); err != nil {
				t.Fatalf("installing %s %s: %v", kind, o.GetName(), err)
			}
			if kind == "ClusterRole" || kind == "ClusterRoleBinding" {
				t.Cleanup(func() { _ = env.Client.Delete(context.Background(), o) })
			}
		}
	}
	if sa == "" {
		t.Fatal("the chart renders no ServiceAccount")
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: fmt.Sprintf("system:serviceaccount:%s:%s", release, sa)}
	// The impersonated identity really is limited: RBAC objects are not in the chart's rules.
	limited, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	if err := limited.List(ctx, &rbacv1.ClusterRoleList{}); !apierrors.IsForbidden(err) {
		t.Fatalf("listing ClusterRoles as the chart's ServiceAccount: %v, want Forbidden (else this test proves nothing)", err)
	}

	o.MetricsAddr, o.ProbeAddr, o.SkipNameValidation = "0", "0", true
	o.LeaderElection, o.LeaderElectionID, o.LeaderElectionNamespace = true, "sluice-rbac-test", release
	o.ControllerNamespace, o.MetricsServer = release, "http://127.0.0.1:1"
	mgr, err := manager.New(ctx, cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() { cancel(); <-done }()
	go testenv.PlayDeploymentController(ctx, env.Client, app)

	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "podinfo", Namespace: app},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "podinfo"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "podinfo"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "podinfo:1",
					EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{
						LocalObjectReference: corev1.LocalObjectReference{Name: "podinfo-env"}}}}}}}}},
	}
	canary := &sluicev1.Canary{
		ObjectMeta: metav1.ObjectMeta{Name: "podinfo", Namespace: app},
		Spec: sluicev1.CanarySpec{
			TargetRef: sluicev1.TargetReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "podinfo"},
			Service:   sluicev1.CanaryService{Port: 9898},
			Analysis:  sluicev1.CanaryAnalysis{Interval: "1s", Threshold: 5, MaxWeight: 50, StepWeight: 10, AdvanceWithoutData: true},
		},
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "podinfo-env", Namespace: app},
		StringData: map[string]string{"MODE": "a"}}
	for _, o := range []client.Object{secret, dep, canary} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	waitPhase(t, canary, sluicev1.CanaryPhaseInitialized)
	patch := client.MergeFrom(dep.DeepCopy())
	dep.Spec.Template.Spec.Containers[0].Image = "podinfo:2"
	if err := env.Client.Patch(ctx, dep, patch); err != nil {
		t.Fatal(err)
	}
	waitPhase(t, canary, sluicev1.CanaryPhaseSucceeded)
	primary := &appsv1.Deployment{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: app, Name: "podinfo-primary"}, primary); err != nil {
		t.Fatal(err)
	}
	if img := primary.Spec.Template.Spec.Containers[0].Image; img != "podinfo:2" {
		t.Fatalf("primary runs %s after the rollout", img)
	}
	return limited
}

func waitPhase(t *testing.T, c *sluicev1.Canary, phase sluicev1.CanaryPhase) {
	t.Helper()
	got := &sluicev1.Canary{}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(c), got); err == nil && got.Status.Phase == phase {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("canary did not reach %s; status %+v", phase, got.Status)
}
