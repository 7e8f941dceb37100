package chart

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
// drives the seed's Canary through a whole rollout, then has MetricTemplates validated: the chart
// grants everything the controllers need (the Lease's get, create and update included) and
// nothing is done with other credentials.
func TestManagerRunsWithOnlyTheChartsRBAC(t *testing.T) {
	if env == nil {
		t.Skip("needs envtest")
	}
	release := env.Namespace(t)
	app := env.Namespace(t)
	runRolloutWithChartRBAC(t, release, app, nil, manager.Options{})
}

// TestNamespaceScopedManagerRunsWithOnlyTheChartsRBAC installs the chart with watchNamespaces
// (RoleBindings in the watched namespace, the shared Role in the release namespace, nothing
// cluster-wide, the data-plane controller off) and runs the same rollout and MetricTemplates as
// the ServiceAccount: the manager completes them, and really cannot read Deployments outside its
// namespace.
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
	// The MetricTemplate controller writes the Ready condition of a tenant's template and of a
	// shared one in the release namespace.
	for _, ns := range []string{app, release} {
		mt := &sluicev1.MetricTemplate{ObjectMeta: metav1.ObjectMeta{Name: "latency", Namespace: ns},
			Spec: sluicev1.MetricTemplateSpec{Query: `histogram_quantile(0.99, rate(latency_bucket{namespace="{{ .namespace }}"}[1m]))`}}
		if err := env.Client.Create(ctx, mt); err != nil {
			t.Fatal(err)
		}
		waitReady(t, mt)
	}
	return limited
}

// waitReady waits until mt has a Ready condition (written by the manager).
func waitReady(t *testing.T, mt *sluicev1.MetricTemplate) {
	t.Helper()
	got := &sluicev1.MetricTemplate{}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(mt), got); err == nil &&
			meta.FindStatusCondition(got.Status.Conditions, sluicev1.ConditionReady) != nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("metrictemplate %s/%s got no Ready condition; status %+v", mt.Namespace, mt.Name, got.Status)
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

// grants lists the "group/resource verb" pairs of rules (a core-group resource as "/resource").
func grants(t *testing.T, roles ...*unstructured.Unstructured) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, role := range roles {
		if role == nil {
			continue
		}
		rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
		for _, rule := range rules {
			m := rule.(map[string]any)
			groups, _, _ := unstructured.NestedStringSlice(m, "apiGroups")
			resources, _, _ := unstructured.NestedStringSlice(m, "resources")
			verbs, _, _ := unstructured.NestedStringSlice(m, "verbs")
			for _, g := range groups {
				for _, r := range resources {
					for _, v := range verbs {
						out[g+"/"+r+" "+v] = true
					}
				}
			}
		}
	}
	return out
}

// TestRBACGrantsOnlyWhatTheCodeUses pins the manager's rights in each install mode to the calls
// the controllers make: writes are create, patch (merge patches and server-side apply) and delete;
// update only where the apiserver asks for it (the leader-election Lease, and canaries/finalizers
// for owner references that block a Canary's deletion); the Lease is read, created and renewed,
// never listed, watched or deleted; the data-plane controller's rights only where it runs (never
// with watchNamespaces, which grants nothing cluster-wide); the MetricTemplate controller may
// write its templates' status in every mode.
func TestRBACGrantsOnlyWhatTheCodeUses(t *testing.T) {
	dataPlaneOnly := []string{"sluice.dev/dataplanes patch", "sluice.dev/dataplanes/status patch", "/namespaces patch",
		"/pods/eviction create", "apps/statefulsets patch", "argoproj.io/rollouts patch",
		"admissionregistration.k8s.io/mutatingwebhookconfigurations list"}
	for name, tc := range map[string]struct {
		values    map[string]any
		dataPlane bool
		// clusterBindings are the ClusterRoleBindings rendered.
		clusterBindings []string
	}{
		"cluster-wide":                        {nil, true, []string{"sluice-manager", "sluice-metrics-auth"}},
		"cluster-wide without the data plane": {map[string]any{"dataPlane": map[string]any{"enabled": false}}, false, []string{"sluice-manager", "sluice-metrics-auth"}},
		"watched namespaces":                  {map[string]any{"watchNamespaces": []any{"team-a"}}, false, nil},
		"watched namespaces, secure /metrics": {map[string]any{"watchNamespaces": []any{"team-a"}, "metrics": map[string]any{"secure": true}}, false, []string{"sluice-metrics-auth"}},
	} {
		t.Run(name, func(t *testing.T) {
			r := render(t, tc.values)
			manager := grants(t, r.Find("ClusterRole", "sluice-manager"))
			for g := range manager {
				if strings.HasSuffix(g, " update") && g != "sluice.dev/canaries/finalizers update" {
					t.Errorf("the manager's role grants %s: no code path updates (it patches)", g)
				}
				if strings.HasPrefix(g, "coordination.k8s.io/") {
					t.Errorf("the manager's role grants %s: leases are the leader-election Role's, in the release namespace", g)
				}
			}
			for _, g := range []string{"sluice.dev/canaries patch", "sluice.dev/canaries/status patch", "sluice.dev/metrictemplates/status patch",
				"apps/deployments create", "apps/deployments patch", "apps/deployments delete", "/services patch", "gateway.networking.k8s.io/httproutes create"} {
				if !manager[g] {
					t.Errorf("the manager's role lacks %s", g)
				}
			}
			for _, g := range dataPlaneOnly {
				if manager[g] != tc.dataPlane {
					t.Errorf("the manager's role grants %s: %v, want %v (the data-plane controller runs: %v)", g, manager[g], tc.dataPlane, tc.dataPlane)
				}
			}
			var lease []string
			for g := range grants(t, r.Find("Role", "sluice-leader-election")) {
				if v, ok := strings.CutPrefix(g, "coordination.k8s.io/leases "); ok {
					lease = append(lease, v)
				}
			}
			slices.Sort(lease)
			if !slices.Equal(lease, []string{"create", "get", "update"}) {
				t.Errorf("leader-election Role grants %v on leases, want [create get update]", lease)
			}
			var bindings []string
			for _, crb := range r.OfKind("ClusterRoleBinding") {
				bindings = append(bindings, crb.GetName())
			}
			if !slices.Equal(bindings, tc.clusterBindings) {
				t.Errorf("ClusterRoleBindings %v, want %v", bindings, tc.clusterBindings)
			}
			if r.Find("ClusterRole", "sluice-dataplane") != nil {
				t.Error("a separate data-plane ClusterRole is rendered")
			}
			if _, watched := tc.values["watchNamespaces"]; watched {
				// Shared MetricTemplates live in the release namespace: their status is written there.
				if shared := grants(t, r.Find("Role", "sluice-shared")); !shared["sluice.dev/metrictemplates/status patch"] {
					t.Errorf("the release namespace's shared Role lacks metrictemplates/status patch: %v", shared)
				}
			}
		})
	}
	// Without the data-plane controller the role is the Canary and MetricTemplate controllers'
	// generated one (config/rbac/canary), less leases.
	var want []any
	for _, rule := range readYAML(t, "config/rbac/canary/role.yaml")["rules"].([]any) {
		if groups, _, _ := unstructured.NestedStringSlice(rule.(map[string]any), "apiGroups"); !slices.Contains(groups, "coordination.k8s.io") {
			want = append(want, rule)
		}
	}
	got := mustNested(t, render(t, map[string]any{"dataPlane": map[string]any{"enabled": false}}).Find("ClusterRole", "sluice-manager"), "rules")
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ClusterRole rules without the data plane differ from config/rbac/canary/role.yaml (run make manifests):\n got %v\nwant %v", got, want)
	}
	// The data-plane controller cannot run in a namespace-scoped install: asking for it is an error,
	// not a cluster-wide grant for a controller that never starts.
	_, err := helmchart.Render(helmchart.Release{Values: map[string]any{"watchNamespaces": []any{"team-a"},
		"dataPlane": map[string]any{"enabled": true}}})
	if err == nil || !strings.Contains(err.Error(), "dataPlane.enabled") {
		t.Errorf("dataPlane.enabled=true with watchNamespaces rendered; err = %v", err)
	}
}
