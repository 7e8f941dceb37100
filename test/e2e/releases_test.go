package e2e

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/manager"
	"sluice.dev/sluice/test/cluster"
	"sluice.dev/sluice/test/meshsim"
	"sluice.dev/sluice/test/stack"
)

// startStack brings the demo stack up with the manager and the demo app, waits for the Canary to
// initialize, and on cleanup stops everything and checks that no process of it is left.
func startStack(t *testing.T) *stack.Stack {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: needs the local cluster")
	}
	ctx := context.Background()
	s, err := stack.Start(ctx, stack.Options{PodReadyDelay: time.Second, Logf: t.Logf,
		Services: []stack.Service{{Namespace: stack.DemoNamespace, Name: stack.DemoApp, RPS: 50}}})
	if err != nil {
		t.Fatal(err)
	}
	pids := s.Cluster.PIDs()
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("stopping the stack: %v", err)
		}
		for name, pid := range pids {
			if cluster.ProcessRunning(pid) {
				t.Errorf("%s (pid %d) still running after Stop", name, pid)
			}
		}
		if out, _ := os.ReadFile("/proc/self/task/" + strconv.Itoa(os.Getpid()) + "/children"); len(strings.TrimSpace(string(out))) > 0 {
			for _, p := range strings.Fields(string(out)) {
				if pid, _ := strconv.Atoi(p); cluster.ProcessRunning(pid) {
					t.Errorf("child process %d still running after Stop", pid)
				}
			}
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
	return s
}

func TestGoodReleasePromotedBadReleaseRolledBack(t *testing.T) {
	s := startStack(t)
	ctx := context.Background()
	good, err := s.RunRelease(ctx, stack.Release{Namespace: stack.DemoNamespace, Canary: stack.DemoApp,
		Image: "ghcr.io/stefanprodan/podinfo:6.7.1", Timeout: 4 * time.Minute})
	t.Log("good release:\n" + strings.Join(good.Timeline, "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if good.Phase != sluicev1.CanaryPhaseSucceeded || !slices.Equal(good.Weights, []int32{10, 20, 30, 40, 50}) ||
		good.FinalWeight != 0 || !strings.HasSuffix(good.PrimaryImage, ":6.7.1") || good.FailedChecks != 0 {
		t.Fatalf("good release: %s, weights %v, final %d, failed %d, primary %s",
			good.Phase, good.Weights, good.FinalWeight, good.FailedChecks, good.PrimaryImage)
	}

	bad, err := s.RunRelease(ctx, stack.Release{Namespace: stack.DemoNamespace, Canary: stack.DemoApp,
		Image: "ghcr.io/stefanprodan/podinfo:6.7.2", Annotations: map[string]string{meshsim.AnnotationErrorRate: "0.2"},
		Timeout: 4 * time.Minute})
	t.Log("bad release:\n" + strings.Join(bad.Timeline, "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if bad.Phase != sluicev1.CanaryPhaseFailed || bad.FinalWeight != 0 || bad.FailedChecks != 5 ||
		!strings.HasSuffix(bad.PrimaryImage, ":6.7.1") {
		t.Fatalf("bad release: %s, final weight %d, failed %d, primary %s", bad.Phase, bad.FinalWeight, bad.FailedChecks, bad.PrimaryImage)
	}
	// The failing values are success rates well below the 99 % threshold (20 % errors at 10 %
	// weight, diluted at most by the last good seconds of the window).
	for _, v := range bad.FailedValues {
		name, val, _ := strings.Cut(v, "=")
		f, err := strconv.ParseFloat(val, 64)
		if name != sluicev1.MetricRequestSuccessRate || err != nil || f >= 99 {
			t.Errorf("unexpected failing verdict %s", v)
		}
	}
	if len(bad.FailedValues) == 0 {
		t.Error("no failing success-rate values recorded")
	}
	// All traffic is back on the primary: the simulated mesh (which re-reads the route every
	// 250 ms) sees no weight on the canary backend.
	deadline := time.Now().Add(5 * time.Second)
	for {
		canaryWeight := int32(0)
		for _, b := range s.Sims[0].Backends() {
			if strings.HasSuffix(b.Service, "-canary") {
				canaryWeight += b.Weight
			}
		}
		if canaryWeight == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("mesh still sends %d%% to the canary", canaryWeight)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
