// Command benchscale measures the Sluice manager at scale on the local cluster (test/cluster: a
// real etcd, kube-apiserver, kube-controller-manager and kube-scheduler, kwok playing the nodes),
// with the manager built from this tree and run as its own process, as in production:
//
//  1. the manager starts on the empty cluster (its base RSS);
//  2. N applications are created (ConfigMap, Deployment with one pod) and rolled out;
//  3. N Canaries are created at once (Gateway API provider, interval 10 s, stepWeight 10,
//     maxWeight 50, no metrics): the time until all are Initialized, and the rate;
//  4. idle: API requests by verb and resource, CPU and RSS of the manager, reconciles;
//  5. all N targets get a new image at once: every run's duration (median, p95, max, and as a
//     ratio to interval × steps), API requests per run, events emitted, written and found in the
//     apiserver, client-side throttling.
//
// It prints a Markdown table and stops everything it started (also on Ctrl-C).
//
// The local cluster's kube-controller-manager and kwok run with more workers than their defaults
// (clusterTuning; -default-cluster runs them without).
//
//	make bench-scale N=1000
//	go run ./hack/benchscale -n 1000 [-replicas 0] [-idle 60s] [-manager-arg=--kube-api-qps=100]
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

	"sluice.dev/sluice/test/managerproc"
)

// config is the benchmark's flags.
type config struct {
	n, perNamespace, replicas, workers int
	interval, idle, timeout            time.Duration
	rollout                            bool
	keepLog                            string
	// profiles: the folder for the kube-apiserver's CPU profiles ("": none).
	profiles    string
	managerArgs stringList
	// controllerManagerArgs, kwokParallelism and componentGOGC tune the local cluster
	// (test/cluster.Options): clusterTuning, kwokTuning and gogcTuning unless defaultCluster.
	controllerManagerArgs stringList
	kwokParallelism       int
	componentGOGC         int
	defaultCluster        bool
	args                  []string
}

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, " ") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func main() {
	var c config
	flag.IntVar(&c.n, "n", 100, "number of Canaries (each with its Deployment, ConfigMap, primary, 3 Services, HTTPRoute and pods)")
	flag.IntVar(&c.perNamespace, "per-namespace", 20, "Canaries per namespace")
	flag.IntVar(&c.replicas, "replicas", 1, "replicas of each target Deployment (0: no target pods; the primary still runs one)")
	flag.IntVar(&c.workers, "workers", 16, "parallel requests of the benchmark when it creates and changes objects")
	flag.DurationVar(&c.interval, "interval", 10*time.Second, "analysis interval of every Canary")
	flag.DurationVar(&c.idle, "idle", 60*time.Second, "length of the idle measurement")
	flag.DurationVar(&c.timeout, "timeout", 30*time.Minute, "bound of each phase (initialization, the release)")
	flag.BoolVar(&c.rollout, "rollout", true, "release a new image to all N targets at once and follow the runs")
	flag.StringVar(&c.keepLog, "keep-log", "", "copy the manager's log to this file before cleaning up")
	flag.StringVar(&c.profiles, "apiserver-profiles", "", "write 30 s CPU profiles of the kube-apiserver to this folder: one from when a quarter of the Canaries are Initialized, one from 40 s into the release (read them with go tool pprof -top bin/kube-apiserver FILE)")
	flag.Var(&c.controllerManagerArgs, "kcm-arg", "extra kube-controller-manager flag of the local cluster (repeatable; after the tuning, so it overrides it), e.g. -kcm-arg=--concurrent-deployment-syncs=50")
	flag.IntVar(&c.kwokParallelism, "kwok-parallelism", kwokTuning, "pods kwok moves through their stages at a time (kwok's default: 4)")
	flag.IntVar(&c.componentGOGC, "cluster-gogc", gogcTuning, "GOGC of the local cluster's components (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok; not the manager's): memory for CPU (Go's default: 100)")
	flag.BoolVar(&c.defaultCluster, "default-cluster", false, "run kube-controller-manager and kwok with their default parallelism (5 workers per controller, 4 pods at a time) and the components with Go's default GOGC instead of the tuning for thousands of Deployments")
	flag.Var(&c.managerArgs, "manager-arg", "extra manager flag (repeatable), e.g. -manager-arg=--max-concurrent-reconciles=8")
	flag.Parse()
	c.args = os.Args[1:]
	if c.defaultCluster {
		c.kwokParallelism, c.componentGOGC = 0, 0
	} else {
		c.controllerManagerArgs = append(slices.Clone(clusterTuning), c.controllerManagerArgs...)
	}
	ctrl.SetLogger(zap.New(zap.Level(zapcore.ErrorLevel)))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, c); err != nil {
		fmt.Fprintln(os.Stderr, "benchscale:", err)
		os.Exit(1)
	}
}

// clusterTuning is how the benchmark runs the local cluster's kube-controller-manager unless
// -default-cluster, and kwokTuning how many pods kwok moves at a time: a cluster that carries
// thousands of Deployments gives these controllers more workers than their defaults (5 per
// controller; kwok 4 pods), or their own queues, not the apiserver or Sluice, set how fast a
// thousand Deployments roll (the table splits a run's time between the cluster and Sluice; the
// header names the flags the cluster ran with).
var clusterTuning = []string{"--concurrent-deployment-syncs=25", "--concurrent-replicaset-syncs=25",
	"--concurrent-service-endpoint-syncs=25", "--concurrent-endpoint-syncs=25"}

const kwokTuning = 16

// gogcTuning is the GOGC of the local cluster's components unless -default-cluster: on 2 cores
// shared by the whole cluster and the manager, the kube-apiserver's garbage collection took 14 % of
// its CPU in background marking alone during a release of 1000 (its CPU profile); with 400 it
// collects about a quarter as often, for more memory (the machine has plenty; the manager keeps
// Go's default, so its RSS rows are unchanged).
const gogcTuning = 400

// say prints a progress line on stderr.
func say(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s  "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

// waitFor polls cond every second until it holds, printing progress every 10 s.
// errors: timeout, ctx, the manager exiting.
func waitFor(ctx context.Context, timeout time.Duration, what string, m *managerproc.Proc, cond func() (bool, string)) error {
	deadline := time.Now().Add(timeout)
	lastSay := time.Now()
	for {
		ok, progress := cond()
		if ok {
			return nil
		}
		if err := m.Alive(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not done after %s (%s)", what, timeout, progress)
		}
		if time.Since(lastSay) >= 10*time.Second {
			say("%s: %s", what, progress)
			lastSay = time.Now()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}
