package chart

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"sluice.dev/sluice/test/helmchart"
)

// managerArgs returns the manager container's args of Deployment d as flag → value.
func managerArgs(t *testing.T, d *unstructured.Unstructured) map[string]string {
	t.Helper()
	c := mustNested(t, d, "spec", "template", "spec", "containers").([]any)[0].(map[string]any)
	args, _, _ := unstructured.NestedStringSlice(c, "args")
	out := map[string]string{}
	for _, a := range args {
		k, v, _ := strings.Cut(a, "=")
		out[k] = v
	}
	return out
}

// TestShardsDeployOneManagerEachAndCoverEveryCanaryOnce: shards render one Deployment each, with
// its replicas, its Lease (--shard-name) and its selector (--shard); the selectors are disjoint
// and cover every Canary — unlabelled, labelled with any shard, labelled with an unknown one —
// exactly once; the DataPlane controller runs in the default shard only; each shard has its own
// pods (disjoint Deployment selectors) and its own PodDisruptionBudget.
func TestShardsDeployOneManagerEachAndCoverEveryCanaryOnce(t *testing.T) {
	r := render(t, map[string]any{"shards": []any{
		map[string]any{"name": "main"}, map[string]any{"name": "b"}, map[string]any{"name": "c", "replicas": 3},
	}})
	if d := r.Find("Deployment", "sluice"); d != nil {
		t.Error("the unsharded Deployment is rendered next to the shards")
	}
	wantReplicas := map[string]int64{"sluice-main": 2, "sluice-b": 2, "sluice-c": 3}
	selectors := map[string]labels.Selector{}
	podSelectors := map[string]map[string]any{}
	for name, replicas := range wantReplicas {
		d := r.Find("Deployment", name)
		if d == nil {
			t.Fatalf("no Deployment %s; rendered %d Deployments", name, len(r.OfKind("Deployment")))
		}
		if n := mustNested(t, d, "spec", "replicas"); n != replicas {
			t.Errorf("%s: replicas = %v, want %d", name, n, replicas)
		}
		args := managerArgs(t, d)
		shard := strings.TrimPrefix(name, "sluice-")
		if args["--shard-name"] != shard {
			t.Errorf("%s: --shard-name = %q, want %q (its own Lease)", name, args["--shard-name"], shard)
		}
		if args["--leader-elect"] != "true" {
			t.Errorf("%s: --leader-elect = %q", name, args["--leader-elect"])
		}
		sel, err := labels.Parse(args["--shard"])
		if err != nil || args["--shard"] == "" {
			t.Fatalf("%s: --shard %q: %v", name, args["--shard"], err)
		}
		selectors[shard] = sel
		if want := map[string]string{"main": "true", "b": "false", "c": "false"}[shard]; args["--enable-dataplane"] != want {
			t.Errorf("%s: --enable-dataplane = %q, want %s (the default shard only)", name, args["--enable-dataplane"], want)
		}
		podSelectors[name] = mustNested(t, d, "spec", "selector", "matchLabels").(map[string]any)
		podLabels := mustNested(t, d, "spec", "template", "metadata", "labels").(map[string]any)
		if !labels.SelectorFromSet(toStrings(podSelectors[name])).Matches(labels.Set(toStrings(podLabels))) {
			t.Errorf("%s: selector %v does not match its pods %v", name, podSelectors[name], podLabels)
		}
		if pdb := r.Find("PodDisruptionBudget", name); pdb == nil {
			t.Errorf("%s: no PodDisruptionBudget", name)
		} else if got := mustNested(t, pdb, "spec", "selector", "matchLabels").(map[string]any); len(got) != len(podSelectors[name]) {
			t.Errorf("%s: PodDisruptionBudget selects %v, want %v", name, got, podSelectors[name])
		}
	}
	// No Deployment selects another shard's pods.
	for a, sa := range podSelectors {
		for b, sb := range podSelectors {
			if a != b && labels.SelectorFromSet(toStrings(sa)).Matches(labels.Set(toStrings(sb))) {
				t.Errorf("Deployment %s selects the pods of %s", a, b)
			}
		}
	}
	for _, canary := range []labels.Set{
		{}, {"app": "web"}, {"sluice.dev/shard": "main"}, {"sluice.dev/shard": "b"},
		{"sluice.dev/shard": "c"}, {"sluice.dev/shard": "gone"}, {"sluice.dev/shard": ""},
	} {
		var by []string
		for shard, sel := range selectors {
			if sel.Matches(canary) {
				by = append(by, shard)
			}
		}
		if len(by) != 1 {
			t.Errorf("a Canary labelled %v is handled by shards %v, want exactly one", canary, by)
		}
	}
	if sel := selectors["main"]; !sel.Matches(labels.Set{}) {
		t.Errorf("the default shard (%s) does not take unlabelled Canaries", sel)
	}
}

// TestOneShardHandlesEveryCanary: a single shard has its own Lease but no selector.
func TestOneShardHandlesEveryCanary(t *testing.T) {
	r := render(t, map[string]any{"shards": []any{map[string]any{"name": "only", "replicas": 1}}})
	d := r.Find("Deployment", "sluice-only")
	if d == nil {
		t.Fatal("no Deployment sluice-only")
	}
	args := managerArgs(t, d)
	if _, ok := args["--shard"]; ok || args["--shard-name"] != "only" {
		t.Errorf("args %v: want --shard-name=only and no --shard", args)
	}
	if r.Find("PodDisruptionBudget", "sluice-only") != nil {
		t.Error("a PodDisruptionBudget for a single replica")
	}
}

// TestShardValuesAreChecked: duplicate names, names that are not DNS labels, unknown fields, and
// replicas without leader election are refused.
func TestShardValuesAreChecked(t *testing.T) {
	for name, values := range map[string]map[string]any{
		"duplicate":     {"shards": []any{map[string]any{"name": "a"}, map[string]any{"name": "a"}}},
		"not a label":   {"shards": []any{map[string]any{"name": "Shard_A"}}},
		"no name":       {"shards": []any{map[string]any{"replicas": 2}}},
		"unknown field": {"shards": []any{map[string]any{"name": "a", "selector": "x=y"}}},
		"no election": {"leaderElection": map[string]any{"enabled": false}, "replicaCount": 1,
			"shards": []any{map[string]any{"name": "a"}, map[string]any{"name": "b", "replicas": 2}}},
	} {
		if _, err := helmchart.Render(helmchart.Release{Values: values}); err == nil {
			t.Errorf("%s: rendered", name)
		}
	}
}

func toStrings(m map[string]any) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k], _ = v.(string)
	}
	return out
}
