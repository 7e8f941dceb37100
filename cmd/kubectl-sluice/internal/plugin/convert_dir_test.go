package plugin

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConvertReadsADirectory (findings16 #2): `convert -f DIR`, the command's own example, reads
// the directory's manifest files in name order as kubectl apply -f DIR does, skipping other files;
// a directory without manifests is a clear error.
func TestConvertReadsADirectory(t *testing.T) {
	dir := t.TempDir()
	canary := func(name string) string {
		return `apiVersion: flagger.app/v1beta1
kind: Canary
metadata: {name: ` + name + `, namespace: test}
spec:
  provider: istio
  targetRef: {apiVersion: apps/v1, kind: Deployment, name: ` + name + `}
  service: {port: 80}
  analysis: {interval: 1m, threshold: 2, maxWeight: 50, stepWeight: 10}
`
	}
	for name, body := range map[string]string{"b.yaml": canary("bravo"), "a.yml": canary("alpha"), "notes.txt": "not a manifest"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := run(t, "", "convert", "-f", dir)
	if err != nil {
		t.Fatalf("convert -f DIR: %v\n%s", err, out)
	}
	a, b := strings.Index(out, "name: alpha"), strings.Index(out, "name: bravo")
	if a < 0 || b < 0 || a > b {
		t.Fatalf("want both Canaries, alpha (a.yml) before bravo (b.yaml):\n%s", out)
	}
	if strings.Contains(out, "not a manifest") {
		t.Fatalf("read a non-manifest file:\n%s", out)
	}

	empty := t.TempDir()
	out, err = run(t, "", "convert", "-f", empty)
	var exit *ExitError
	if err == nil || errors.As(err, &exit) || !strings.Contains(err.Error(), "no .yaml, .yml or .json files") {
		t.Fatalf("convert of an empty directory: %v\n%s", err, out)
	}
}
