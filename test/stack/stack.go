// Package stack starts everything the demo and the end-to-end tests run on: a local cluster
// (test/cluster: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok), the CRDs
// (Sluice's, Gateway API's, Istio's), a simulated mesh data plane per service (test/meshsim), a
// real Prometheus scraping it every second (test/promtest), and the Sluice manager in-process.
// Stop tears all of it down; nothing keeps running after it.
package stack

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"sluice.dev/sluice/controllers/manager"
	"sluice.dev/sluice/controllers/scheme"
	"sluice.dev/sluice/egress"
	"sluice.dev/sluice/test/cluster"
	"sluice.dev/sluice/test/controlplane"
	"sluice.dev/sluice/test/meshsim"
	"sluice.dev/sluice/test/promtest"
	"sluice.dev/sluice/test/testenv"
)

// Service is one apex Service whose traffic the simulated mesh generates.
type Service struct {
	// Namespace and Name of the apex Service; Route names the HTTPRoute/VirtualService to read
	// (default Name).
	Namespace, Name, Route string
	// RPS is the simulated request rate (default 50).
	RPS int
	// Metrics selects the meshes whose metrics the simulator exposes (default Istio's).
	Metrics meshsim.Flavor
}

// Options configure Start.
type Options struct {
	// Services get a simulated mesh data plane each, scraped by Prometheus.
	Services []Service
	// PodReadyDelay makes rollouts visibly gradual (kwok's pod-ready delay).
	PodReadyDelay time.Duration
	// Injector, when set, runs the simulated Linkerd proxy injector, installs the simulated
	// Linkerd control plane (test/controlplane) at Injector.Version, which the injector follows,
	// and serves the proxy-health exporter (ProxyHealth) to Prometheus.
	Injector *cluster.InjectorOptions
	// Dir keeps the cluster's state (default a temporary folder removed by Stop).
	Dir string
	// Logf receives progress lines. Optional.
	Logf func(format string, args ...any)
}

// Stack is a running demo/e2e environment.
type Stack struct {
	Cluster *cluster.Cluster
	Prom    *promtest.Server
	Client  client.Client
	Config  *rest.Config
	Sims    []*meshsim.Sim
	// ProxyHealth reports each watched namespace's health as the data plane sees it (with
	// Options.Injector).
	ProxyHealth *ProxyHealth

	cancel  context.CancelFunc
	stopped []func() error
	logf    func(string, ...any)
}

// Start brings the stack up in dependency order; on any failure it stops what it started.
// The manager is not started: call StartManager. errors: a component that does not come up.
func Start(ctx context.Context, o Options) (s *Stack, err error) {
	logf := o.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	runCtx, cancel := context.WithCancel(context.Background())
	s = &Stack{cancel: cancel, logf: logf}
	defer func() {
		if err != nil {
			_ = s.Stop()
			s = nil
		}
	}()

	t0 := time.Now()
	c, err := cluster.Start(ctx, cluster.Options{Dir: o.Dir, PodReadyDelay: o.PodReadyDelay, Injector: o.Injector, Logf: logf})
	if err != nil {
		return s, fmt.Errorf("starting the local cluster: %w", err)
	}
	s.Cluster = c
	s.stopped = append(s.stopped, c.Stop)
	s.Config = c.RESTConfig()
	s.Config.QPS, s.Config.Burst = 200, 400
	logf("cluster up in %s (kubeconfig %s)", time.Since(t0).Round(100*time.Millisecond), c.Kubeconfig())

	paths, err := testenv.CRDPaths()
	if err != nil {
		return s, err
	}
	if _, err := envtest.InstallCRDs(s.Config, envtest.CRDInstallOptions{Paths: paths, ErrorIfPathMissing: true}); err != nil {
		return s, fmt.Errorf("installing CRDs: %w", err)
	}
	logf("CRDs installed: Sluice, Gateway API, Istio")
	if s.Client, err = client.New(s.Config, client.Options{Scheme: scheme.New()}); err != nil {
		return s, err
	}

	var targets []string
	for _, svc := range o.Services {
		if err := s.ensureNamespace(ctx, svc.Namespace); err != nil {
			return s, err
		}
		sim, err := meshsim.New(s.Config, meshsim.Options{Namespace: svc.Namespace, Service: svc.Name, Route: svc.Route,
			RPS: svc.RPS, Listen: "127.0.0.1:0", Metrics: svc.Metrics})
		if err != nil {
			return s, fmt.Errorf("simulated mesh for %s/%s: %w", svc.Namespace, svc.Name, err)
		}
		done := make(chan error, 1)
		go func() { done <- sim.Run(runCtx) }()
		if err := waitListening(ctx, sim); err != nil {
			return s, err
		}
		s.stopped = append(s.stopped, func() error {
			s.cancel()
			if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
				return err
			}
			return nil
		})
		s.Sims = append(s.Sims, sim)
		targets = append(targets, sim.Addr())
	}
	if o.Injector != nil {
		if err := controlplane.InstallLinkerd(ctx, s.Client, o.Injector.Version); err != nil {
			return s, fmt.Errorf("installing the simulated Linkerd control plane: %w", err)
		}
		logf("simulated Linkerd control plane %s installed in namespace %s", o.Injector.Version, controlplane.Namespace)
		if s.ProxyHealth, err = startProxyHealth(s.Client); err != nil {
			return s, err
		}
		s.stopped = append(s.stopped, s.ProxyHealth.close)
		targets = append(targets, s.ProxyHealth.Addr())
	}
	prom, err := promtest.Start(ctx, promtest.Config{ScrapeTargets: targets, ScrapeInterval: time.Second})
	if err != nil {
		return s, fmt.Errorf("starting Prometheus: %w", err)
	}
	s.Prom = prom
	s.stopped = append(s.stopped, prom.Stop)
	logf("Prometheus %s scraping %d simulated mesh endpoint(s) every 1s", prom.Address(), len(targets))
	return s, nil
}

// waitListening waits until the simulated mesh's metrics server has an address.
func waitListening(ctx context.Context, sim *meshsim.Sim) error {
	for i := 0; i < 100; i++ {
		if addr := sim.Addr(); addr != "" {
			if _, _, err := net.SplitHostPort(addr); err == nil {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return errors.New("simulated mesh did not start listening")
}

func (s *Stack) ensureNamespace(ctx context.Context, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := s.Client.Create(ctx, ns); client.IgnoreAlreadyExists(err) != nil {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return nil
}

// StartManager runs the Sluice manager in this process against the stack, with Prometheus (unless
// o.MetricsServer names another address) as the default metrics server and its 1 s scrape
// interval. Everything in the stack listens on 127.0.0.1, so loopback destinations are allowed
// (egress.Loopback) unless o.AllowEgressTo is set (an empty, non-nil list allows none). It stops
// with Stop.
func (s *Stack) StartManager(ctx context.Context, o manager.Options) error {
	if o.MetricsServer == "" {
		o.MetricsServer = s.Prom.Address()
	}
	if o.AllowEgressTo == nil {
		o.AllowEgressTo = []string{egress.Loopback}
	}
	o.ScrapeInterval = time.Second
	if o.MetricsAddr == "" {
		o.MetricsAddr = "0"
	}
	if o.ProbeAddr == "" {
		o.ProbeAddr = "0"
	}
	mgr, err := manager.New(ctx, s.Config, o)
	if err != nil {
		return err
	}
	mctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	// Stop the manager first: it is the last thing started.
	s.stopped = append(s.stopped, func() error { cancel(); return <-done })
	s.logf("Sluice manager running (metrics server %s)", s.Prom.Address())
	return nil
}

// Stop stops everything in reverse start order and reports every error.
func (s *Stack) Stop() error {
	if s == nil {
		return nil
	}
	var errs []error
	for i := len(s.stopped) - 1; i >= 0; i-- {
		if err := s.stopped[i](); err != nil {
			errs = append(errs, err)
		}
	}
	s.stopped = nil
	s.cancel()
	return errors.Join(errs...)
}
