package plugin

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/manager"
	"sluice.dev/sluice/test/stack"
)

// TestDashboardFollowsARelease runs the demo stack (local cluster with the simulated mesh, real
// Prometheus and the Sluice manager) and follows a good release on the Canary's page in
// Chromium: each new weight of the status is on the page within 2 s, the charts have one point
// per check of the run with the verdict of status, and abort, clicked and confirmed, rolls the
// run back: the canary is Failed at weight 0, and the page says so.
func TestDashboardFollowsARelease(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: needs the local cluster")
	}
	tb := newTab(t)
	ctx := context.Background()
	s, err := stack.Start(ctx, stack.Options{PodReadyDelay: time.Second, Logf: t.Logf,
		Services: []stack.Service{{Namespace: stack.DemoNamespace, Name: stack.DemoApp, RPS: 50}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("stopping the stack: %v", err)
		}
	})
	if err := s.StartManager(ctx, manager.Options{SkipNameValidation: true}); err != nil {
		t.Fatal(err)
	}
	if err := s.ApplyDemoApp(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitPhase(ctx, stack.DemoNamespace, stack.DemoApp, sluicev1.CanaryPhaseInitialized, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	tb.open(runDashboard(t, s.Config, "-n", stack.DemoNamespace) + "#/canary/" + stack.DemoNamespace + "/" + stack.DemoApp)

	// A good release.
	key := client.ObjectKey{Namespace: stack.DemoNamespace, Name: stack.DemoApp}
	d := &appsv1.Deployment{}
	if err := s.Client.Get(ctx, key, d); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(d.DeepCopy())
	d.Spec.Template.Spec.Containers[0].Image = "ghcr.io/stefanprodan/podinfo:6.7.1"
	if err := s.Client.Patch(ctx, d, patch); err != nil {
		t.Fatal(err)
	}

	// Every weight the status takes up to 30 % reaches the page within 2 s.
	seen := map[int32]bool{}
	cn := &sluicev1.Canary{}
	deadline := time.Now().Add(3 * time.Minute)
	for !seen[30] {
		if time.Now().After(deadline) {
			t.Fatalf("the run did not reach weight 30 (phase %s, weight %d)", cn.Status.Phase, cn.Status.CanaryWeight)
		}
		if err := s.Client.Get(ctx, key, cn); err != nil {
			t.Fatal(err)
		}
		w := cn.Status.CanaryWeight
		if cn.Status.Phase == sluicev1.CanaryPhaseProgressing && w > 0 && !seen[w] {
			seen[w] = true
			took := tb.waitJS(fmt.Sprintf(`(document.getElementById('weight-text') || {dataset: {}}).dataset.weight === '%d'`, w), 2*time.Second)
			t.Logf("weight %d%% in status, on the page %s later", w, took.Round(time.Millisecond))
		}
		time.Sleep(50 * time.Millisecond)
	}

	// The charts hold one point per check of the run, with its verdict.
	if err := s.Client.Get(ctx, key, cn); err != nil {
		t.Fatal(err)
	}
	run := cn.Status.Run
	tb.waitJS(fmt.Sprintf(`document.querySelectorAll('.weight-chart circle.check').length === %d`, len(run.Checks)), 2*time.Second)
	for mi, m := range run.Metrics {
		var want []string
		for _, c := range run.Checks {
			if mi < len(c.Results) && c.Results[mi].Verdict != "" {
				want = append(want, string(c.Results[mi].Verdict))
			}
		}
		got := eval[[]string](tb, `[...document.querySelectorAll('svg.metric-chart[data-metric="`+m.Name+`"] g.point')].map(g => g.dataset.verdict)`)
		if strings.Join(got, ",") != strings.Join(want, ",") || len(want) == 0 {
			t.Errorf("%s: the chart's verdicts %v, status %v", m.Name, got, want)
		}
	}
	tb.screenshots("release")

	// Abort, confirmed: the run rolls back.
	tb.click(`#levers button[data-lever="abort"]`)
	tb.click(`#confirm`)
	tb.waitJS(`document.querySelector('#lever-answer [data-ok="true"]')`, 5*time.Second)
	if err := s.WaitPhase(ctx, stack.DemoNamespace, stack.DemoApp, sluicev1.CanaryPhaseFailed, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := s.Client.Get(ctx, key, cn); err != nil {
		t.Fatal(err)
	}
	if cn.Status.CanaryWeight != 0 || cn.Status.Run.Outcome != sluicev1.RunRolledBack ||
		!strings.Contains(cn.Status.Runs[len(cn.Status.Runs)-1].Reason, "aborted by request") {
		t.Errorf("after abort: weight %d, run %s, runs %+v", cn.Status.CanaryWeight, cn.Status.Run.Outcome, cn.Status.Runs)
	}
	tb.waitJS(`document.querySelector('#head [data-phase="Failed"]') && document.getElementById('weight-text').dataset.weight === '0'`, 2*time.Second)
	tb.waitJS(`document.querySelector('#runs [data-phase="RolledBack"]')`, 2*time.Second)
}
