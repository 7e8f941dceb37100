package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/manager"
	"sluice.dev/sluice/test/stack"
)

// slowRollingApp is blueGreenApp with 6 replicas rolled one pod at a time (maxUnavailable 1,
// maxSurge 1); the primary copies the strategy, so its rollout at promotion takes several pod
// ready delays.
var slowRollingApp = strings.Replace(blueGreenApp, "  replicas: 2\n",
	"  replicas: 6\n  strategy: {type: RollingUpdate, rollingUpdate: {maxUnavailable: 1, maxSurge: 1}}\n", 1)

// TestKubernetesBlueGreenSwitchBackWaitsForPrimaryRollout (findings16 #7): with provider
// kubernetes, the apex Service goes back from the canary to the primary only once the primary's
// rollout is complete. Sampled every 500 ms through the apiserver (apex selector, the apex's
// EndpointSlices with each pod's revision, the primary Deployment's status): from the moment the
// apex selects the canary, it never selects a set holding a pod of the old revision, nor one
// with fewer ready endpoints than the canary had when it carried all traffic; whenever it selects
// the primary, the primary's rollout is complete.
func TestKubernetesBlueGreenSwitchBackWaitsForPrimaryRollout(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: needs the local cluster")
	}
	ctx := context.Background()
	s, err := stack.Start(ctx, stack.Options{PodReadyDelay: 3 * time.Second, Logf: t.Logf, Services: []stack.Service{
		{Namespace: stack.DemoNamespace, Name: "podinfo", RPS: 40},
		{Namespace: stack.DemoNamespace, Name: "podinfo-canary", RPS: 20}, // the load test
	}})
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
	if err := s.Apply(ctx, []byte(slowRollingApp)); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitPhase(ctx, stack.DemoNamespace, "podinfo", sluicev1.CanaryPhaseInitialized, 3*time.Minute); err != nil {
		t.Fatal(err)
	}
	const image = "ghcr.io/stefanprodan/podinfo:6.7.1"
	sampler := sampleBackends(s, "", image)
	out, err := s.RunRelease(ctx, stack.Release{Namespace: stack.DemoNamespace, Canary: "podinfo", Image: image,
		Replicas: ptr.To[int32](6), Timeout: 5 * time.Minute})
	t.Log("release:\n" + strings.Join(out.Timeline, "\n"))
	if err != nil {
		sampler.finish()
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // the EndpointSlices settle after the last switch
	samples, errs := sampler.finish()
	t.Logf("%d samples (%d failed reads); changes:\n%s", len(samples), errs, strings.Join(changes(samples), "\n"))
	if out.Phase != sluicev1.CanaryPhaseSucceeded || out.PrimaryImage != image {
		t.Fatalf("release %s, primary %s", out.Phase, out.PrimaryImage)
	}
	checkApexSwitchBack(t, samples, 6)
}

// checkApexSwitchBack applies the switch-back rule to provider kubernetes samples; replicas is
// the release's replica count.
func checkApexSwitchBack(t *testing.T, samples []backendSample, replicas int) {
	t.Helper()
	first := -1
	for i, x := range samples {
		if x.apexOn == "canary" {
			first = i
			break
		}
	}
	if first < 0 {
		t.Fatal("the apex never selected the canary")
	}
	canaryServed, back := 0, -1
	for i, x := range samples[first:] {
		switch {
		case len(x.apex.oldRevision) > 0:
			t.Errorf("apex selects old-revision pods %v: %s", x.apex.oldRevision, x)
		case x.apexOn == "canary":
			if back >= 0 {
				t.Errorf("the apex selects the canary again after switching back: %s", x)
			}
			if x.apex.lagging == 0 {
				canaryServed = max(canaryServed, x.apex.ready)
			}
		case x.apexOn != "primary":
			t.Errorf("the apex selects neither backend: %s", x)
		default:
			if back < 0 {
				back = first + i
			}
			if x.apex.ready < canaryServed && x.apex.lagging == 0 {
				t.Errorf("apex on the primary with %d ready endpoints after the canary served with %d: %s", x.apex.ready, canaryServed, x)
			}
			if !x.primary.complete() {
				t.Errorf("apex on the primary before its rollout is complete: %s", x)
			}
		}
	}
	if canaryServed < replicas {
		t.Errorf("the canary served with %d ready endpoints, want %d", canaryServed, replicas)
	}
	if back < 0 {
		t.Fatal("the apex never went back to the primary")
	}
	// How long the primary rolled while the canary carried the traffic, for the report.
	rolling := samples[first].at
	for _, x := range samples[first:back] {
		if !x.primary.complete() {
			rolling = x.at
		}
	}
	t.Logf("apex on the canary %s .. %s; primary's rollout last seen incomplete at %s; back on the primary at %s: %s",
		samples[first].at.Format("15:04:05.000"), samples[back-1].at.Format("15:04:05.000"), rolling.Format("15:04:05.000"),
		samples[back].at.Format("15:04:05.000"), samples[back])
	if last := samples[len(samples)-1]; last.apexOn != "primary" || last.apex.ready != replicas || len(last.apex.oldRevision) > 0 {
		t.Errorf("at the end: %s", last)
	}
}
