// Command demo runs Sluice's main job end to end on a local cluster: real Kubernetes controllers
// with kwok pods, a simulated mesh (control plane as real Deployments, an injector, data-plane
// metrics), a real Prometheus, and the Sluice manager. It runs two releases of podinfo — a good
// one that is promoted and a bad one that is rolled back — and two Linkerd data-plane scenarios
// on four meshed namespaces declared by one DataPlane: the control plane is upgraded first, then
// one edit of the DataPlane's version moves the fleet, canary namespace first; and a version
// whose proxy breaks the canary namespace is rolled back there, the fleet untouched. It prints a
// live timeline and exits 0 only when all four end as expected.
//
//	go run ./hack/demo          the two releases, then tear everything down
//	go run ./hack/demo -keep    bring the stack up with the app and keep it until Ctrl-C
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/manager"
	"sluice.dev/sluice/test/cluster"
	"sluice.dev/sluice/test/meshsim"
	"sluice.dev/sluice/test/stack"
)

func main() {
	var o options
	flag.BoolVar(&o.keep, "keep", false, "keep the stack running until interrupted instead of running the releases")
	flag.StringVar(&o.dir, "dir", "", "state folder of the cluster (default a temporary folder)")
	flag.DurationVar(&o.podReadyDelay, "pod-ready-delay", time.Second, "how long kwok pods take to become ready")
	flag.BoolVar(&o.externalManager, "external-manager", false,
		"with -keep: do not run the manager in this process (hack/demo-stack.sh runs bin/sluice, so it can be restarted alone)")
	verbose := flag.Bool("v", false, "show the manager's logs")
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseDevMode(false), zap.Level(levelFor(*verbose))))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	code := run(ctx, o)
	os.Exit(code)
}

// options are the demo's flags.
type options struct {
	keep, externalManager bool
	dir                   string
	podReadyDelay         time.Duration
}

func levelFor(verbose bool) zapcore.Level {
	if verbose {
		return zapcore.InfoLevel
	}
	return zapcore.ErrorLevel
}

func say(format string, args ...any) {
	fmt.Printf("%s  "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

func run(ctx context.Context, o options) int {
	keep := o.keep
	t0 := time.Now()
	say("Starting the local stack: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok, Prometheus (pods ready after %s)", o.podReadyDelay)
	s, err := stack.Start(ctx, stack.Options{
		Dir:           o.dir,
		PodReadyDelay: o.podReadyDelay,
		Services:      []stack.Service{{Namespace: stack.DemoNamespace, Name: stack.DemoApp, RPS: 50}},
		Injector:      &cluster.InjectorOptions{Version: proxyFrom},
		Logf:          func(f string, a ...any) { say("  "+f, a...) },
	})
	if err != nil {
		say("FAILED to start the stack: %v", err)
		return 1
	}
	defer func() {
		say("Stopping the stack")
		if err := s.Stop(); err != nil {
			say("stopping: %v", err)
		}
	}()
	if keep && o.externalManager {
		if err := s.ApplyDemoApp(ctx); err != nil {
			say("FAILED to apply the demo app: %v", err)
			return 1
		}
		say("Stack is up. export KUBECONFIG=%s   Prometheus: %s", s.Cluster.Kubeconfig(), s.Prom.Address())
		say("Try: kubectl -n demo get canary,deploy,httproute (kubectl: bin/kubectl); the manager runs apart (hack/demo-stack.sh restart-manager)")
		say("Try: bin/kubectl-sluice dashboard -n demo (make build; with that KUBECONFIG), then open http://127.0.0.1:3100")
		<-ctx.Done()
		return 0
	}
	if err := s.StartManager(ctx, manager.Options{}); err != nil {
		say("FAILED to start the manager: %v", err)
		return 1
	}
	if err := s.ApplyDemoApp(ctx); err != nil {
		say("FAILED to apply the demo app: %v", err)
		return 1
	}
	applied := time.Now()
	say("Applied demo/podinfo: Deployment, Service, HTTPRoute (parentRef Service: mesh mode), Canary (10s interval)")
	if err := s.WaitPhase(ctx, stack.DemoNamespace, stack.DemoApp, sluicev1.CanaryPhaseInitialized, 2*time.Minute); err != nil {
		say("FAILED: %v", err)
		return 1
	}
	say("Canary initialized %s after it was applied: podinfo-primary serves 100%% of the traffic", time.Since(applied).Round(100*time.Millisecond))

	if keep {
		say("Stack is up. export KUBECONFIG=%s   Prometheus: %s", s.Cluster.Kubeconfig(), s.Prom.Address())
		say("Try: kubectl -n demo get canary,deploy,httproute (kubectl: bin/kubectl); stop with make demo-down, or Ctrl-C when run directly")
		say("Try: bin/kubectl-sluice dashboard -n demo (make build; with that KUBECONFIG), then open http://127.0.0.1:3100")
		<-ctx.Done()
		return 0
	}

	ok := true
	say("Release 1 (good): podinfo 6.7.0 -> 6.7.1, error rate 0.1%%")
	good, err := s.RunRelease(ctx, stack.Release{Namespace: stack.DemoNamespace, Canary: stack.DemoApp,
		Image: "ghcr.io/stefanprodan/podinfo:6.7.1", Timeout: 4 * time.Minute, Out: os.Stdout})
	if err != nil {
		say("Release 1 FAILED: %v", err)
		return 1
	}
	wantGood := good.Phase == sluicev1.CanaryPhaseSucceeded && slices.Equal(good.Weights, []int32{10, 20, 30, 40, 50}) &&
		good.FinalWeight == 0 && strings.HasSuffix(good.PrimaryImage, ":6.7.1")
	say("Release 1: %s in %s; weights %v then %d; primary runs %s  [%s]", good.Phase, good.Duration.Round(time.Second),
		good.Weights, good.FinalWeight, good.PrimaryImage, verdict(wantGood))
	ok = ok && wantGood

	say("Release 2 (bad): podinfo 6.7.1 -> 6.7.2, error rate 0.1%% -> 20%%")
	bad, err := s.RunRelease(ctx, stack.Release{Namespace: stack.DemoNamespace, Canary: stack.DemoApp,
		Image: "ghcr.io/stefanprodan/podinfo:6.7.2", Annotations: map[string]string{meshsim.AnnotationErrorRate: "0.2"},
		Timeout: 4 * time.Minute, Out: os.Stdout})
	if err != nil {
		say("Release 2 FAILED: %v", err)
		return 1
	}
	wantBad := bad.Phase == sluicev1.CanaryPhaseFailed && bad.FinalWeight == 0 && bad.FailedChecks >= 5 &&
		strings.HasSuffix(bad.PrimaryImage, ":6.7.1") && len(bad.FailedValues) > 0
	say("Release 2: %s in %s after %d failed checks (%s); weight %d; primary still runs %s  [%s]", bad.Phase,
		bad.Duration.Round(time.Second), bad.FailedChecks, firstN(bad.FailedValues, 3),
		bad.FinalWeight, bad.PrimaryImage, verdict(wantBad))
	ok = ok && wantBad

	wantUpgrade, wantRollback, err := dataPlaneScenarios(ctx, s)
	if err != nil {
		say("Data plane scenario FAILED: %v", err)
		return 1
	}
	ok = ok && wantUpgrade && wantRollback

	say("Summary: good release promoted: %s; bad release rolled back: %s; data plane upgraded control plane first, canary namespace first: %s; "+
		"broken proxy rolled back in the canary namespace, fleet untouched: %s; total %s",
		verdict(wantGood), verdict(wantBad), verdict(wantUpgrade), verdict(wantRollback), time.Since(t0).Round(time.Second))
	say("To follow releases in a browser: make demo-up, then bin/kubectl-sluice dashboard -n demo with the KUBECONFIG it prints (docs/dashboard.md)")
	if !ok {
		return 1
	}
	return 0
}

func verdict(ok bool) string {
	if ok {
		return "as expected"
	}
	return "UNEXPECTED"
}

// firstN joins the first n values, with "…" when there were more.
func firstN(s []string, n int) string {
	if len(s) > n {
		return strings.Join(s[:n], ", ") + ", …"
	}
	return strings.Join(s, ", ")
}
