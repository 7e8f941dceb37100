package plugin

import (
	"bytes"
	"context"
	"io"
	"k8s.io/utils/ptr"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// t0 is the fixed "now" of the tests.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// newCanary creates the seed's Canary (interval 1m, threshold 5, stepWeight 10, maxWeight 50)
// named name in ns, after mutate, and returns it as stored.
func newCanary(t *testing.T, ns, name string, mutate func(*sluicev1.Canary)) *sluicev1.Canary {
	t.Helper()
	cn := &sluicev1.Canary{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: sluicev1.CanarySpec{
			TargetRef: sluicev1.TargetReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name},
			Service:   sluicev1.CanaryService{Port: 9898},
			Analysis: sluicev1.CanaryAnalysis{
				Interval: "1m", Threshold: 5, MaxWeight: 50, StepWeight: 10,
				Metrics: []sluicev1.CanaryMetric{{Name: sluicev1.MetricRequestSuccessRate, ThresholdRange: &sluicev1.ThresholdRange{Min: ptr.To(99.0)}}},
			},
		},
	}
	if mutate != nil {
		mutate(cn)
	}
	if err := env.Client.Create(context.Background(), cn); err != nil {
		t.Fatalf("creating canary %s/%s: %v", ns, name, err)
	}
	return cn
}

// setStatus writes st through the status subresource, as the controller would.
func setStatus(t *testing.T, cn *sluicev1.Canary, st sluicev1.CanaryStatus) {
	t.Helper()
	ctx := context.Background()
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cn), cn); err != nil {
		t.Fatal(err)
	}
	cn.Status = st
	if err := env.Client.Status().Update(ctx, cn); err != nil {
		t.Fatalf("writing the status of %s/%s: %v", cn.Namespace, cn.Name, err)
	}
}

// stored reads the Canary as the apiserver stores it, untyped, so absent and zero fields differ.
func stored(t *testing.T, key types.NamespacedName) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(sluicev1.GroupVersion.String())
	u.SetKind("Canary")
	if err := env.Client.Get(context.Background(), key, u); err != nil {
		t.Fatal(err)
	}
	return u
}

func at(d time.Duration) *metav1.Time {
	t := metav1.NewTime(t0.Add(d))
	return &t
}

// run executes the plugin's command line args against envtest in namespace ns.
func run(t *testing.T, ns string, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	cmd := NewRootCommand(Options{
		Out: &out, ErrOut: &out,
		Connect: func(kf KubeFlags) (client.Client, string, error) {
			if kf.Namespace != "" {
				return env.Client, kf.Namespace, nil
			}
			return env.Client, ns, nil
		},
		Now:        func() time.Time { return t0 },
		IsTerminal: func(io.Writer) bool { return false },
	})
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

// golden compares got with testdata/name, or rewrites the file under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (-update rewrites it)\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// syncBuffer is a bytes.Buffer safe for one writer and one reader.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor polls until cond holds for the buffer's content.
func waitFor(t *testing.T, b *syncBuffer, what string, cond func(string) bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond(b.String()) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; output so far:\n%s", what, b.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func lines(s string) int { return strings.Count(s, "\n") }
