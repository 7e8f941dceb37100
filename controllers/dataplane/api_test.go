package dataplane

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/test/testenv"
)

// validSpec is a Linkerd upgrade with a canary namespace the selector spells out, waves, a bake,
// windows and analysis with a template and an alert.
func validSpec() sluicev1.DataPlaneSpec {
	return sluicev1.DataPlaneSpec{
		Mesh:    sluicev1.MeshLinkerd,
		Version: "edge-26.8.3",
		NamespaceSelector: &sluicev1.NamespaceSelector{MatchExpressions: []sluicev1.NamespaceSelectorRequirement{
			{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpIn, Values: []string{"ns-1", "ns-2", "ns-3"}},
			{Key: "team", Operator: metav1.LabelSelectorOpExists},
		}},
		CanaryNamespaces: []string{"ns-1"},
		Waves:            sluicev1.DataPlaneWaves{Percent: ptr.To[int32](50)},
		BakeTime:         "10m",
		MaxUnavailable:   ptr.To[int32](2),
		Windows:          []sluicev1.ProgressionWindow{{Schedule: "0 9 * * 1-5", Duration: "8h", TimeZone: "Europe/Berlin"}},
		Analysis: sluicev1.DataPlaneAnalysis{Interval: "1m", Threshold: 3, Metrics: []sluicev1.CanaryMetric{
			{Name: sluicev1.MetricRequestSuccessRate, ThresholdRange: &sluicev1.ThresholdRange{Min: ptr.To(99.0)}},
			{Name: "fleet-health", TemplateRef: &sluicev1.CrossNamespaceObjectReference{Name: "fleet-health", Namespace: "sluice-system"},
				ThresholdRange: &sluicev1.ThresholdRange{Min: ptr.To(1.0)}},
		}, Alerts: []sluicev1.CanaryAlert{{Name: "on-call", ProviderRef: sluicev1.CrossNamespaceObjectReference{Name: "slack", Namespace: "sluice-system"}}}},
	}
}

func TestDataPlaneAdmission(t *testing.T) {
	testenv.Require(t, env)
	ctx := context.Background()
	n := 0
	create := func(spec sluicev1.DataPlaneSpec) error {
		n++
		dp := &sluicev1.DataPlane{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("admission-%d", n)}, Spec: spec}
		err := env.Client.Create(ctx, dp)
		if err == nil {
			t.Cleanup(func() { _ = env.Client.Delete(context.Background(), dp) })
		}
		return err
	}
	for name, mutate := range map[string]func(*sluicev1.DataPlaneSpec){
		"linkerd with everything": func(*sluicev1.DataPlaneSpec) {},
		"istio, matchLabels on the canary's name": func(s *sluicev1.DataPlaneSpec) {
			s.Mesh, s.Version, s.Revision = sluicev1.MeshIstio, "", "1-27-1"
			s.NamespaceSelector = &sluicev1.NamespaceSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "ns-1"}}
		},
		"no selector (meshed namespaces), maxNamespaces": func(s *sluicev1.DataPlaneSpec) {
			s.NamespaceSelector = nil
			s.Waves = sluicev1.DataPlaneWaves{MaxNamespaces: ptr.To[int32](2)}
		},
		"selector on other labels only (checked at reconcile time)": func(s *sluicev1.DataPlaneSpec) {
			s.NamespaceSelector = &sluicev1.NamespaceSelector{MatchLabels: map[string]string{"mesh": "yes"}}
			s.CanaryNamespaces = []string{"anything"}
		},
		"stable version": func(s *sluicev1.DataPlaneSpec) { s.Version = "stable-2.14.10" },
		"drift restart, immediate rollback, excluded pods, own control-plane namespace": func(s *sluicev1.DataPlaneSpec) {
			s.DriftPolicy, s.Rollback, s.ControlPlaneNamespace = sluicev1.DriftRestart, sluicev1.RollbackImmediate, "linkerd-cp"
			s.ExcludePods = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "debug"}}
			s.NamespaceSelector, s.CanaryNamespaces = nil, []string{"linkerd"} // "linkerd" is an ordinary namespace here
		},
	} {
		t.Run("accepts "+name, func(t *testing.T) {
			s := validSpec()
			mutate(&s)
			if err := create(s); err != nil {
				t.Fatal(err)
			}
		})
	}
	for _, tc := range []struct {
		name   string
		mutate func(*sluicev1.DataPlaneSpec)
		want   string
	}{
		{"linkerd with a revision", func(s *sluicev1.DataPlaneSpec) { s.Revision = "1-27-1" },
			"spec: mesh linkerd declares spec.version (the proxy version), mesh istio declares spec.revision"},
		{"linkerd without a version", func(s *sluicev1.DataPlaneSpec) { s.Version = "" }, "mesh linkerd declares spec.version"},
		{"istio with a version", func(s *sluicev1.DataPlaneSpec) { s.Mesh = sluicev1.MeshIstio }, "mesh istio declares spec.revision"},
		{"canary kube-system", func(s *sluicev1.DataPlaneSpec) {
			s.NamespaceSelector, s.CanaryNamespaces = nil, []string{"kube-system"}
		},
			"spec.canaryNamespaces must not name kube-system, kube-public, kube-node-lease or the mesh's control-plane namespace"},
		{"canary control-plane namespace", func(s *sluicev1.DataPlaneSpec) { s.NamespaceSelector, s.CanaryNamespaces = nil, []string{"linkerd"} },
			"spec.canaryNamespaces must not name"},
		{"drift policy", func(s *sluicev1.DataPlaneSpec) { s.DriftPolicy = "Ignore" }, "spec.driftPolicy"},
		{"rollback policy", func(s *sluicev1.DataPlaneSpec) { s.Rollback = "Never" }, "spec.rollback"},
		{"envoy is no data-plane mesh", func(s *sluicev1.DataPlaneSpec) { s.Mesh = sluicev1.MeshEnvoy }, `spec.mesh: Unsupported value: "envoy"`},
		{"canary outside matchLabels", func(s *sluicev1.DataPlaneSpec) {
			s.NamespaceSelector = &sluicev1.NamespaceSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "ns-2"}}
		}, "spec.canaryNamespaces must be inside spec.namespaceSelector: its matchLabels kubernetes.io/metadata.name selects another namespace"},
		{"canary not in In", func(s *sluicev1.DataPlaneSpec) { s.CanaryNamespaces = []string{"ns-9"} },
			"a matchExpressions entry on kubernetes.io/metadata.name excludes a canary namespace"},
		{"canary in NotIn", func(s *sluicev1.DataPlaneSpec) {
			s.NamespaceSelector.MatchExpressions[0].Operator = metav1.LabelSelectorOpNotIn
		}, "excludes a canary namespace"},
		{"duplicate canary", func(s *sluicev1.DataPlaneSpec) { s.CanaryNamespaces = []string{"ns-1", "ns-1"} }, "Duplicate value"},
		{"bad canary name", func(s *sluicev1.DataPlaneSpec) { s.CanaryNamespaces = []string{"NS_1"} }, "spec.canaryNamespaces[0]"},
		{"both wave sizes", func(s *sluicev1.DataPlaneSpec) { s.Waves.MaxNamespaces = ptr.To[int32](2) },
			"spec.waves: set either maxNamespaces or percent, not both"},
		{"percent above 100", func(s *sluicev1.DataPlaneSpec) { s.Waves.Percent = ptr.To[int32](101) }, "spec.waves.percent"},
		{"bad istio revision", func(s *sluicev1.DataPlaneSpec) { s.Mesh, s.Version, s.Revision = sluicev1.MeshIstio, "", "1.27.1" },
			"spec.revision"},
		{"proxy version with a space", func(s *sluicev1.DataPlaneSpec) { s.Version = "edge 26" }, "spec.version"},
		{"compareToPrimary", func(s *sluicev1.DataPlaneSpec) {
			s.Analysis.Metrics[0].CompareToPrimary = &sluicev1.PrimaryComparison{MaxDelta: 1}
		}, "compareToPrimary is not supported by a DataPlane"},
		{"template without namespace", func(s *sluicev1.DataPlaneSpec) { s.Analysis.Metrics[1].TemplateRef.Namespace = "" },
			"spec.analysis.metrics[].templateRef.namespace is required"},
		{"alert without namespace", func(s *sluicev1.DataPlaneSpec) { s.Analysis.Alerts[0].ProviderRef.Namespace = "" },
			"spec.analysis.alerts[].providerRef.namespace is required"},
		{"bake time", func(s *sluicev1.DataPlaneSpec) { s.BakeTime = "soon" }, "spec.bakeTime"},
		{"interval below 1s", func(s *sluicev1.DataPlaneSpec) { s.Analysis.Interval = "500ms" }, "spec.analysis.interval must be a duration of at least 1s"},
		{"maxUnavailable 0", func(s *sluicev1.DataPlaneSpec) { s.MaxUnavailable = ptr.To[int32](0) }, "spec.maxUnavailable"},
	} {
		t.Run("rejects "+tc.name, func(t *testing.T) {
			s := validSpec()
			tc.mutate(&s)
			err := create(s)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	t.Run("mesh is immutable", func(t *testing.T) {
		s := validSpec()
		dp := &sluicev1.DataPlane{ObjectMeta: metav1.ObjectMeta{Name: "admission-immutable"}, Spec: s}
		if err := env.Client.Create(ctx, dp); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), dp) })
		dp.Spec.Mesh, dp.Spec.Version, dp.Spec.Revision = sluicev1.MeshIstio, "", "a"
		if err := env.Client.Update(ctx, dp); err == nil || !strings.Contains(err.Error(), "spec.mesh is immutable") {
			t.Fatalf("got %v", err)
		}
	})
}

// TestDataPlaneTableColumns reads the server-side table (what `kubectl get dataplanes`
// prints): MESH, VERSION, WAVE, DESIRED, CURRENT, STATUS, AGE; counts show 0, never blank, even
// before the controller wrote a status.
func TestDataPlaneTableColumns(t *testing.T) {
	testenv.Require(t, env)
	ctx := context.Background()
	dp := &sluicev1.DataPlane{ObjectMeta: metav1.ObjectMeta{Name: "table-columns"}, Spec: validSpec()}
	if err := env.Client.Create(ctx, dp); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), dp) })
	fresh, err := env.Table(ctx, "/apis/sluice.dev/v1alpha1/dataplanes/table-columns")
	if err != nil {
		t.Fatal(err)
	}
	if cells := fmt.Sprint(fresh.Rows[0].Cells[:7]); cells != "[table-columns linkerd <nil> 0 0 0 <nil>]" {
		t.Fatalf("fresh row %q: counts must read 0", cells)
	}
	dp.Status = sluicev1.DataPlaneStatus{Phase: sluicev1.DataPlaneProgressing, Version: "edge-26.8.3", CurrentWave: 2, Desired: 27, Current: 11}
	if err := env.Client.Status().Update(ctx, dp); err != nil {
		t.Fatal(err)
	}
	table, err := env.Table(ctx, "/apis/sluice.dev/v1alpha1/dataplanes/table-columns")
	if err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, c := range table.ColumnDefinitions {
		cols = append(cols, c.Name)
	}
	if fmt.Sprint(cols) != "[Name Mesh Version Wave Desired Current Status Age]" {
		t.Fatalf("columns %v", cols)
	}
	cells := fmt.Sprint(table.Rows[0].Cells[:7])
	if cells != "[table-columns linkerd edge-26.8.3 2 27 11 Progressing]" {
		t.Fatalf("row %s", cells)
	}
}
