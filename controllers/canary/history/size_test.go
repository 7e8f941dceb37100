package history

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/canary/plan"
	"sluice.dev/sluice/controllers/internal/planevent"
	"sluice.dev/sluice/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Run(m, &env)) }

// etcdLimit is etcd's default request size limit (--max-request-bytes), the most a Canary can
// ever weigh.
const etcdLimit = 1536 * 1024

// TestStatusSizeAtTheBound writes, through the status subresource of a real apiserver, the status
// of a Canary after 10 runs of 20 checks of 10 metrics each (with realistic names, queries and
// reasons), and then one filled to every bound of the history (60 checks of 40 metrics, 1 KiB
// queries, 1 KiB reasons, 16 images). Both are accepted, and the stored object's size is printed
// and stays within its budget: 64 KiB for the first, a quarter of etcd's limit for the worst case.
func TestStatusSizeAtTheBound(t *testing.T) {
	testenv.Require(t, env)
	ns := env.Namespace(t)

	t.Run("10 runs of 20 checks and 10 metrics", func(t *testing.T) {
		s := spec(10)
		for i := range s.Analysis.Metrics {
			s.Analysis.Metrics[i].Name = fmt.Sprintf("request-success-rate-%02d", i)
		}
		r := &run{t: t, spec: s}
		query := `sum(rate(istio_requests_total{reporter="destination",destination_workload_namespace="payments",` +
			`destination_workload="checkout-api",response_code!~"5.*"}[1m])) / sum(rate(istio_requests_total{` +
			`reporter="destination",destination_workload_namespace="payments",destination_workload="checkout-api"}[1m])) * 100`
		for i := range 10 {
			r.start(fmt.Sprintf("7f9c%06d", i))
			for c := range 20 {
				r.check(fmt.Sprintf("99.%02d", c), sluicev1.VerdictPass, int32(min(10*(c+1), 50)))
				for j := range r.st.Analysis {
					r.st.Analysis[j].Query, r.st.Analysis[j].ThresholdRange = query, "[99, +Inf]"
				}
			}
			r.end(sluicev1.CanaryPhaseFailed, planevent.Warning(plan.EventRollback,
				"Rolling back 7f9c000001: failed checks threshold reached (5): request-success-rate-00 95.12 below 99 (min)"))
		}
		r.st.Run.Images = []sluicev1.ContainerImage{{Container: "app", Image: "registry.example.com:5000/payments/checkout-api:v2.14.3@sha256:" + strings.Repeat("a", 64)}}
		size := storeStatus(t, ns, "twenty-checks", s, r.st)
		t.Logf("Canary with 10 runs of 20 checks of 10 metrics: %d bytes stored (%.1f%% of etcd's limit)", size, 100*float64(size)/etcdLimit)
		if size > 64*1024 {
			t.Errorf("the Canary weighs %d bytes, over its 64 KiB budget", size)
		}
	})

	t.Run("every bound", func(t *testing.T) {
		s := sluicev1.CanarySpec{}
		st := sluicev1.CanaryStatus{Phase: sluicev1.CanaryPhaseProgressing, LastCheck: &sluicev1.CheckStatus{Time: *at(0), Outcome: sluicev1.CheckPassed}}
		long := strings.Repeat("x", 63)
		img := sluicev1.ContainerImage{Container: long, Image: "registry.example.com:5000/" + strings.Repeat("p", 120) + "@sha256:" + strings.Repeat("a", 64)}
		run := &sluicev1.RunRecord{Revision: long, StartTime: *at(0)}
		for range sluicev1.MaxRunImages {
			run.Images, run.PrimaryImages = append(run.Images, img), append(run.PrimaryImages, img)
		}
		for i := range sluicev1.MaxRunMetrics {
			run.Metrics = append(run.Metrics, sluicev1.RunMetric{Name: fmt.Sprintf("%s-%02d", long[:60], i), Interval: "10m",
				ThresholdRange: &sluicev1.ThresholdRange{Min: ptr.To(-1e300), Max: ptr.To(1e300)}, Query: strings.Repeat("q", maxQuery)})
		}
		for range sluicev1.MaxRunChecks {
			check := sluicev1.CheckRecord{Time: *at(0), Weight: 100, Outcome: sluicev1.CheckFailed, WindowStart: at(0)}
			for range sluicev1.MaxRunMetrics {
				check.Results = append(check.Results, sluicev1.CheckValue{Value: "-123456789.12", PrimaryValue: "-123456789.12", Verdict: sluicev1.VerdictNoData})
			}
			run.Checks = append(run.Checks, check)
		}
		st.Run = run
		for range sluicev1.MaxRunSummaries {
			st.Runs = append(st.Runs, sluicev1.RunSummary{Revision: long, Outcome: sluicev1.RunRolledBack, StartTime: *at(0), EndTime: *at(0),
				Reason: strings.Repeat("r", maxReason), Checks: 1 << 30, FailedChecks: 1 << 30, MaxWeight: 100, Images: run.Images})
		}
		size := storeStatus(t, ns, "every-bound", s, st)
		t.Logf("Canary at every bound of its history: %d bytes stored (%.1f%% of etcd's limit)", size, 100*float64(size)/etcdLimit)
		if size > etcdLimit/4 {
			t.Errorf("the Canary weighs %d bytes, over a quarter of etcd's limit", size)
		}
	})
}

// storeStatus creates a Canary named name with the spec's metrics, writes st as its status and
// returns the size of the object as the apiserver returns it (JSON).
func storeStatus(t *testing.T, ns, name string, s sluicev1.CanarySpec, st sluicev1.CanaryStatus) int {
	t.Helper()
	ctx := context.Background()
	cn := &sluicev1.Canary{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: s}
	cn.Spec.TargetRef = sluicev1.TargetReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name}
	cn.Spec.Service = sluicev1.CanaryService{Port: 9898}
	if err := env.Client.Create(ctx, cn); err != nil {
		t.Fatalf("creating the canary: %v", err)
	}
	cn.Status = st
	if err := env.Client.Status().Update(ctx, cn); err != nil {
		t.Fatalf("writing the status: %v", err)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(sluicev1.GroupVersion.WithKind("Canary"))
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cn), u); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := unstructured.NestedSlice(u.Object, "status", "runs"); len(got) != len(st.Runs) {
		t.Fatalf("stored %d runs, wrote %d", len(got), len(st.Runs))
	}
	if got, _, _ := unstructured.NestedSlice(u.Object, "status", "run", "checks"); len(got) != len(st.Run.Checks) {
		t.Fatalf("stored %d checks, wrote %d", len(got), len(st.Run.Checks))
	}
	data, err := json.Marshal(u.Object)
	if err != nil {
		t.Fatal(err)
	}
	return len(data)
}
