package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

func TestKwokConfigPodReadyDelay(t *testing.T) {
	src := filepath.Join(DefaultBinDir(), StagesFile)
	if _, err := os.Stat(src); err != nil {
		t.Skipf("%s not built: %v", src, err)
	}
	dst := filepath.Join(t.TempDir(), "kwok.yaml")
	if err := writeKwokConfig(src, dst, 1500*time.Millisecond, 0); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	stages := 0
	for doc := range strings.SplitSeq(string(data), "---\n") {
		var obj struct {
			Kind     string
			Metadata struct{ Name string }
			Spec     struct {
				Delay *struct {
					DurationMilliseconds, JitterDurationMilliseconds int64
				}
				Next struct{ StatusTemplate string }
			}
		}
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatalf("%v in %q", err, doc)
		}
		if obj.Kind != "Stage" {
			continue
		}
		stages++
		d := obj.Spec.Delay
		if obj.Metadata.Name != podReadyStage {
			continue
		}
		if d == nil || d.DurationMilliseconds != 1500 || d.JitterDurationMilliseconds != 1500 {
			t.Errorf("pod-ready delay %+v, want 1500 ms", d)
		}
		if !strings.Contains(obj.Spec.Next.StatusTemplate, "containerStatuses:\n") {
			t.Errorf("pod-ready statusTemplate mangled: %q", obj.Spec.Next.StatusTemplate)
		}
	}
	if stages != 5 {
		t.Errorf("%d stages, want kwok's 5 defaults", stages)
	}
}
