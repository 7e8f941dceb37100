package v1alpha1_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"sluice.dev/sluice/test/testenv"
)

// TestSamplesAccepted creates every object of config/samples/ on the apiserver (in a fresh
// namespace), so the samples stay valid as the API evolves.
func TestSamplesAccepted(t *testing.T) {
	testenv.Require(t, env)
	ns := env.Namespace(t)
	files, err := filepath.Glob(filepath.Join(testenv.RepoRoot(), "config", "samples", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no samples found: %v", err)
	}
	kinds := map[string]bool{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			u := &unstructured.Unstructured{}
			if err := dec.Decode(&u.Object); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				t.Fatalf("%s: %v", f, err)
			}
			if len(u.Object) == 0 {
				continue
			}
			if u.GetKind() != "DataPlane" { // cluster-scoped
				u.SetNamespace(ns)
			}
			if err := env.Client.Create(context.Background(), u); err != nil {
				t.Fatalf("%s: %s %s rejected: %v", filepath.Base(f), u.GetKind(), u.GetName(), err)
			}
			kinds[u.GetKind()] = true
		}
	}
	for _, k := range []string{"Canary", "MetricTemplate", "AlertProvider", "DataPlane"} {
		if !kinds[k] {
			t.Errorf("config/samples has no %s", k)
		}
	}
}
