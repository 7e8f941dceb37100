package chart

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/test/helmchart"
	"sluice.dev/sluice/test/testenv"
)

func render(t *testing.T, values map[string]any) *helmchart.Rendered {
	t.Helper()
	r, err := helmchart.Render(helmchart.Release{Values: values})
	if err != nil {
		t.Fatalf("rendering the chart: %v", err)
	}
	return r
}

func mustNested(t *testing.T, o *unstructured.Unstructured, fields ...string) any {
	t.Helper()
	v, ok, err := unstructured.NestedFieldNoCopy(o.Object, fields...)
	if err != nil || !ok {
		t.Fatalf("%s %s: no field %s (%v)", o.GetKind(), o.GetName(), strings.Join(fields, "."), err)
	}
	return v
}

// readYAML decodes the one object of a YAML file of the repository, as Render decodes its output.
func readYAML(t *testing.T, rel string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), rel))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := helmchart.Decode(string(b))
	if err != nil || len(objs) != 1 {
		t.Fatalf("%s: %d objects, %v", rel, len(objs), err)
	}
	return objs[0].Object
}

func TestDefaultsRenderTheExpectedObjects(t *testing.T) {
	r := render(t, nil)
	var got []string
	for _, o := range r.Objects {
		got = append(got, o.GetKind()+"/"+o.GetName())
	}
	want := []string{
		"CustomResourceDefinition/alertproviders.sluice.dev",
		"CustomResourceDefinition/canaries.sluice.dev",
		"CustomResourceDefinition/dataplanes.sluice.dev",
		"CustomResourceDefinition/metrictemplates.sluice.dev",
		"ServiceAccount/sluice",
		"ClusterRole/sluice-edit",
		"ClusterRole/sluice-manager",
		"ClusterRole/sluice-metrics-auth",
		"ClusterRole/sluice-metrics-reader",
		"ClusterRole/sluice-view",
		"ClusterRoleBinding/sluice-manager",
		"ClusterRoleBinding/sluice-metrics-auth",
		"Role/sluice-leader-election",
		"RoleBinding/sluice-leader-election",
		"Service/sluice-metrics",
		"Deployment/sluice",
		"PodDisruptionBudget/sluice",
	}
	if !slices.Equal(got, want) {
		t.Errorf("rendered objects:\n got %q\nwant %q", got, want)
	}
	if !strings.Contains(r.Notes, "kubectl sluice status") {
		t.Errorf("NOTES.txt does not explain the plugin:\n%s", r.Notes)
	}
}

func TestClusterRoleHasNoWildcardsAndMatchesTheGeneratedRole(t *testing.T) {
	for _, values := range []map[string]any{nil, {"watchNamespaces": []any{"a", "b"}}} {
		r := render(t, values)
		for _, kind := range []string{"ClusterRole", "Role"} {
			for _, role := range r.OfKind(kind) {
				rules := mustNested(t, role, "rules").([]any)
				for i, rule := range rules {
					for _, f := range []string{"verbs", "resources", "apiGroups", "resourceNames", "nonResourceURLs"} {
						vals, _, _ := unstructured.NestedStringSlice(rule.(map[string]any), f)
						if slices.Contains(vals, "*") {
							t.Errorf("%s %s rule %d: wildcard in %s: %v", kind, role.GetName(), i, f, vals)
						}
					}
				}
			}
		}
	}

	// The ClusterRole is config/rbac/role.yaml (controller-gen's output) less the leases rule,
	// which the leader-election Role grants in the release namespace only.
	generated := readYAML(t, "config/rbac/role.yaml")["rules"].([]any)
	var want []any
	for _, rule := range generated {
		if groups, _, _ := unstructured.NestedStringSlice(rule.(map[string]any), "apiGroups"); !slices.Contains(groups, "coordination.k8s.io") {
			want = append(want, rule)
		}
	}
	r := render(t, nil)
	got := mustNested(t, r.Find("ClusterRole", "sluice-manager"), "rules")
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ClusterRole rules differ from config/rbac/role.yaml (run hack/chart-crds.sh):\n got %v\nwant %v", got, want)
	}
	leRules := mustNested(t, r.Find("Role", "sluice-leader-election"), "rules").([]any)
	if res, _, _ := unstructured.NestedStringSlice(leRules[0].(map[string]any), "resources"); !slices.Equal(res, []string{"leases"}) {
		t.Errorf("leader-election Role's first rule is not leases: %v", leRules[0])
	}
}

func TestDeploymentIsRestrictedAndWiresTheFlags(t *testing.T) {
	r := render(t, map[string]any{
		"metricsServer":            "http://prom.monitoring:9090",
		"maxProgressing":           3,
		"prometheusScrapeInterval": "30s",
		"watchNamespaces":          []any{"team-a", "team-b"},
		"extraArgs":                []any{"--zap-encoder=console"},
		"allowEgressTo":            []any{"loopback", "cluster"},
		"clusterCIDRs":             []any{"10.244.0.0/16", "fd10:244::/56"},
		"tenantQueries":            map[string]any{"confine": false, "namespaceLabel": "kubernetes_namespace", "maxMetricsServers": 2},
	})
	d := r.Find("Deployment", "sluice")
	if d == nil {
		t.Fatal("no Deployment")
	}
	if n := mustNested(t, d, "spec", "replicas"); n != int64(2) {
		t.Errorf("replicas = %v, want 2", n)
	}
	podSC := mustNested(t, d, "spec", "template", "spec", "securityContext").(map[string]any)
	if podSC["runAsNonRoot"] != true {
		t.Errorf("pod runAsNonRoot = %v", podSC["runAsNonRoot"])
	}
	if v, _, _ := unstructured.NestedString(podSC, "seccompProfile", "type"); v != "RuntimeDefault" {
		t.Errorf("pod seccompProfile = %q", v)
	}
	containers := mustNested(t, d, "spec", "template", "spec", "containers").([]any)
	if len(containers) != 1 {
		t.Fatalf("containers: %d", len(containers))
	}
	c := containers[0].(map[string]any)
	sc := c["securityContext"].(map[string]any)
	for field, want := range map[string]any{"runAsNonRoot": true, "readOnlyRootFilesystem": true, "allowPrivilegeEscalation": false} {
		if sc[field] != want {
			t.Errorf("container securityContext.%s = %v, want %v", field, sc[field], want)
		}
	}
	if drop, _, _ := unstructured.NestedStringSlice(sc, "capabilities", "drop"); !slices.Equal(drop, []string{"ALL"}) {
		t.Errorf("capabilities.drop = %v, want [ALL]", drop)
	}
	if _, ok := sc["capabilities"].(map[string]any)["add"]; ok {
		t.Errorf("capabilities.add is set: %v", sc["capabilities"])
	}
	if v, _, _ := unstructured.NestedString(sc, "seccompProfile", "type"); v != "RuntimeDefault" {
		t.Errorf("container seccompProfile = %q", v)
	}
	for _, probe := range []string{"livenessProbe", "readinessProbe"} {
		port, _, _ := unstructured.NestedFieldNoCopy(c, probe, "httpGet", "port")
		if port != "health" {
			t.Errorf("%s port = %v, want the health port", probe, port)
		}
	}
	ports := map[string]int64{}
	for _, p := range c["ports"].([]any) {
		pm := p.(map[string]any)
		ports[pm["name"].(string)] = pm["containerPort"].(int64)
	}
	if ports["health"] != 8081 || ports["metrics"] != 8443 {
		t.Errorf("container ports = %v, want health 8081 and metrics 8443", ports)
	}
	args, _, _ := unstructured.NestedStringSlice(c, "args")
	for _, want := range []string{
		"--leader-elect=true",
		"--health-probe-bind-address=:8081",
		"--metrics-bind-address=:8443",
		"--metrics-secure=false",
		"--controller-namespace=sluice-system",
		"--allow-cross-namespace-refs=false",
		"--enable-dataplane=false",
		"--metrics-server=http://prom.monitoring:9090",
		"--max-progressing=3",
		"--prometheus-scrape-interval=30s",
		"--namespace=team-a,team-b",
		"--zap-encoder=console",
		"--allow-egress-to=loopback,cluster",
		"--cluster-cidrs=10.244.0.0/16,fd10:244::/56",
		"--confine-tenant-queries=false",
		"--tenant-namespace-label=kubernetes_namespace",
		"--max-metrics-servers=2",
	} {
		if !slices.Contains(args, want) {
			t.Errorf("args %q lack %q", args, want)
		}
	}
	// With watched namespaces, RoleBindings in each of them replace the ClusterRoleBinding, and
	// nothing is granted cluster-wide: /metrics is plain HTTP unless metrics.secure asks for the
	// apiserver's (cluster-scoped) reviews.
	for _, crb := range r.OfKind("ClusterRoleBinding") {
		t.Errorf("ClusterRoleBinding %s rendered with watchNamespaces", crb.GetName())
	}
	var bound []string
	for _, rb := range r.OfKind("RoleBinding") {
		if rb.GetName() == "sluice-manager" {
			bound = append(bound, rb.GetNamespace())
		}
	}
	if !slices.Equal(bound, []string{"team-a", "team-b"}) {
		t.Errorf("manager RoleBindings in %v, want [team-a team-b]", bound)
	}
}

func TestLeaderElectionIsRequiredForReplicas(t *testing.T) {
	_, err := helmchart.Render(helmchart.Release{Values: map[string]any{"leaderElection": map[string]any{"enabled": false}}})
	if err == nil || !strings.Contains(err.Error(), "leaderElection") {
		t.Errorf("2 replicas without leader election rendered; err = %v", err)
	}
	r := render(t, map[string]any{"replicaCount": 1, "leaderElection": map[string]any{"enabled": false}})
	if r.Find("Role", "sluice-leader-election") != nil || r.Find("PodDisruptionBudget", "sluice") != nil {
		t.Error("leader-election Role or PodDisruptionBudget rendered for one replica without leader election")
	}
}

func TestCRDsSwitchAndKeepPolicy(t *testing.T) {
	if crds := render(t, map[string]any{"crds": map[string]any{"enabled": false}}).OfKind("CustomResourceDefinition"); len(crds) != 0 {
		t.Errorf("crds.enabled=false rendered %d CRDs", len(crds))
	}
	for _, keep := range []bool{true, false} {
		crds := render(t, map[string]any{"crds": map[string]any{"keep": keep}}).OfKind("CustomResourceDefinition")
		if len(crds) != 4 {
			t.Fatalf("crds.keep=%v: %d CRDs, want 4 (Canary, MetricTemplate, AlertProvider, DataPlane)", keep, len(crds))
		}
		for _, crd := range crds {
			policy, has := crd.GetAnnotations()["helm.sh/resource-policy"]
			if keep && policy != "keep" || !keep && has {
				t.Errorf("crds.keep=%v: %s has resource-policy %q", keep, crd.GetName(), policy)
			}
		}
	}
	// The templates print the generated CRDs unchanged, "{{ ... }}" in descriptions included.
	for _, crd := range render(t, nil).OfKind("CustomResourceDefinition") {
		src := readYAML(t, filepath.Join("config", "crd", "sluice.dev_"+strings.SplitN(crd.GetName(), ".", 2)[0]+".yaml"))
		if !reflect.DeepEqual(crd.Object["spec"], src["spec"]) {
			t.Errorf("%s: the rendered spec differs from config/crd (run hack/chart-crds.sh)", crd.GetName())
		}
	}
}

func TestChartIsInSyncWithGeneratedManifests(t *testing.T) {
	tmp := t.TempDir()
	cmd := exec.Command("bash", filepath.Join(testenv.RepoRoot(), "hack", "chart-crds.sh"), tmp)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/chart-crds.sh: %v\n%s", err, out)
	}
	files, _ := filepath.Glob(filepath.Join(tmp, "templates", "crds", "*.yaml"))
	for _, f := range []string{"manager-rules.yaml", "canary-rules.yaml"} {
		files = append(files, filepath.Join(tmp, "files", f))
	}
	if len(files) < 2 {
		t.Fatalf("hack/chart-crds.sh wrote %v", files)
	}
	for _, f := range files {
		rel, _ := filepath.Rel(tmp, f)
		want, _ := os.ReadFile(f)
		got, err := os.ReadFile(filepath.Join(helmchart.Dir(), rel))
		if err != nil || string(got) != string(want) {
			t.Errorf("charts/sluice/%s is out of date: run hack/chart-crds.sh (%v)", rel, err)
		}
	}
}

func TestSchemaRejectsBadValues(t *testing.T) {
	for name, values := range map[string]map[string]any{
		"unknown key":       {"replicas": 2},
		"replicas type":     {"replicaCount": "two"},
		"bad duration":      {"prometheusScrapeInterval": "15 seconds"},
		"negative cap":      {"maxProgressing": -1},
		"bad namespace":     {"watchNamespaces": []any{"Team_A"}},
		"metrics server":    {"metricsServer": "prometheus:9090"},
		"crds switch type":  {"crds": map[string]any{"enabled": "yes"}},
		"servicemonitor ko": {"serviceMonitor": map[string]any{"enable": true}},
		"egress class":      {"allowEgressTo": []any{"private"}},
		"cluster range":     {"clusterCIDRs": []any{"10.244.0.0"}},
		"namespace label":   {"tenantQueries": map[string]any{"namespaceLabel": "kubernetes.namespace"}},
		"no metrics server": {"tenantQueries": map[string]any{"maxMetricsServers": 0}},
	} {
		if _, err := helmchart.Render(helmchart.Release{Values: values}); err == nil {
			t.Errorf("%s: values %v accepted", name, values)
		}
	}
}

func TestOptionalObjects(t *testing.T) {
	r := render(t, nil)
	if r.Find("ServiceMonitor", "sluice") != nil || r.Find("ConfigMap", "sluice-dashboard") != nil {
		t.Error("ServiceMonitor or dashboard rendered by default")
	}
	r = render(t, map[string]any{
		"serviceMonitor":   map[string]any{"enabled": true, "labels": map[string]any{"release": "prom"}},
		"grafanaDashboard": map[string]any{"enabled": true, "namespace": "grafana"},
	})
	sm := r.Find("ServiceMonitor", "sluice")
	if sm == nil || sm.GetAPIVersion() != "monitoring.coreos.com/v1" || sm.GetLabels()["release"] != "prom" {
		t.Fatalf("ServiceMonitor: %v", sm)
	}
	// It selects the metrics Service by labels that Service has, on its named port.
	svc := r.Find("Service", "sluice-metrics")
	sel, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	for k, v := range sel {
		if svc.GetLabels()[k] != v {
			t.Errorf("ServiceMonitor selects %s=%s, the metrics Service has %q", k, v, svc.GetLabels()[k])
		}
	}
	cm := r.Find("ConfigMap", "sluice-dashboard")
	if cm == nil || cm.GetNamespace() != "grafana" || cm.GetLabels()["grafana_dashboard"] != "1" {
		t.Fatalf("dashboard ConfigMap: %v", cm)
	}
	file, err := os.ReadFile(filepath.Join(helmchart.Dir(), "dashboards", "sluice.json"))
	if err != nil {
		t.Fatal(err)
	}
	if data, _, _ := unstructured.NestedString(cm.Object, "data", "sluice.json"); data != strings.TrimRight(string(file), "\n") {
		t.Error("the dashboard ConfigMap does not hold dashboards/sluice.json as written")
	}
}

func TestDashboardCoversTheControllerMetrics(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(helmchart.Dir(), "dashboards", "sluice.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		UID    string `json:"uid"`
		Panels []struct {
			Title       string `json:"title"`
			FieldConfig struct {
				Defaults struct {
					Mappings []struct {
						Options map[string]struct {
							Text string `json:"text"`
						} `json:"options"`
					} `json:"mappings"`
				} `json:"defaults"`
			} `json:"fieldConfig"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("dashboards/sluice.json: %v", err)
	}
	if dash.UID == "" {
		t.Error("the dashboard has no uid")
	}
	var exprs []string
	phaseText := map[string]string{}          // the Canary phase panel's mapping
	dataPlanePhaseText := map[string]string{} // the DataPlane panel's mapping
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
		into := phaseText
		if strings.HasPrefix(p.Title, "Data plane") {
			into = dataPlanePhaseText
		}
		for _, m := range p.FieldConfig.Defaults.Mappings {
			for v, o := range m.Options {
				into[v] = o.Text
			}
		}
	}
	all := strings.Join(exprs, "\n")
	for _, metric := range []string{
		"sluice_canary_phase", "sluice_canary_weight", "sluice_canary_failed_checks",
		"sluice_canary_metric_value", "sluice_canary_rollout_duration_seconds_bucket",
		"sluice_canary_promotions_total", "sluice_canary_rollbacks_total",
		"sluice_dataplane_phase", "sluice_dataplane_wave", "sluice_dataplane_desired_proxies", "sluice_dataplane_current_proxies",
		"sluice_dataplane_unmanaged_pods", "sluice_dataplane_drifted_pods", "sluice_dataplane_control_plane_ready",
	} {
		if !strings.Contains(all, metric+"{") {
			t.Errorf("no panel queries %s", metric)
		}
	}
	// The phase panel's value mapping is the encoding of sluice_canary_phase the controller exports.
	for i, p := range sluicev1.CanaryPhases {
		if got := phaseText[strconv.Itoa(i)]; got != string(p) {
			t.Errorf("phase value %d maps to %q, want %q", i, got, p)
		}
	}
	// And the DataPlane panel's, of sluice_dataplane_phase.
	for i, p := range sluicev1.DataPlanePhases {
		if got := dataPlanePhaseText[strconv.Itoa(i)]; got != string(p) {
			t.Errorf("data plane phase value %d maps to %q, want %q", i, got, p)
		}
	}
}
