package e2e

import (
	"context"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/manager"
	"sluice.dev/sluice/test/cluster"
	"sluice.dev/sluice/test/stack"
)

// stackOptions configure startSafetyStack.
type stackOptions struct {
	podReadyDelay time.Duration
	metricsServer string // default: the stack's Prometheus
	withoutCanary bool   // apply the app without its Canary (and do not wait for it)
}

// startSafetyStack brings the demo stack up (manager and demo app), stopping everything on
// cleanup and checking no process of it is left.
func startSafetyStack(t *testing.T, o stackOptions, proxy func(prom string) string) *stack.Stack {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: needs the local cluster")
	}
	ctx := context.Background()
	if o.podReadyDelay == 0 {
		o.podReadyDelay = time.Second
	}
	s, err := stack.Start(ctx, stack.Options{PodReadyDelay: o.podReadyDelay, Logf: t.Logf,
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
	})
	metricsServer := ""
	if proxy != nil {
		metricsServer = proxy(s.Prom.Address())
	}
	if err := s.StartManager(ctx, manager.Options{MetricsServer: metricsServer, SkipNameValidation: true}); err != nil {
		t.Fatal(err)
	}
	if o.withoutCanary {
		if err := s.ApplyDemoAppWithout(ctx, "Canary"); err != nil {
			t.Fatal(err)
		}
		return s
	}
	if err := s.ApplyDemoApp(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitPhase(ctx, stack.DemoNamespace, stack.DemoApp, sluicev1.CanaryPhaseInitialized, 3*time.Minute); err != nil {
		t.Fatal(err)
	}
	return s
}

// demoCanary reads the demo Canary.
func demoCanary(t *testing.T, s *stack.Stack) *sluicev1.Canary {
	t.Helper()
	c := &sluicev1.Canary{}
	if err := s.Client.Get(context.Background(), client.ObjectKey{Namespace: stack.DemoNamespace, Name: stack.DemoApp}, c); err != nil {
		t.Fatal(err)
	}
	return c
}

// waitCanary polls the demo Canary every 100 ms until cond holds, failing after timeout.
func waitCanary(t *testing.T, s *stack.Stack, timeout time.Duration, what string, cond func(*sluicev1.Canary) bool) *sluicev1.Canary {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		c := demoCanary(t, s)
		if cond(c) {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s (phase %s, weight %d, conditions %+v)", what, timeout, c.Status.Phase, c.Status.CanaryWeight, c.Status.Conditions)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// readyEndpoints counts the ready endpoints of Service name's EndpointSlices.
func readyEndpoints(ctx context.Context, s *stack.Stack, ns, name string) (int, error) {
	slices := &discoveryv1.EndpointSliceList{}
	if err := s.Client.List(ctx, slices, client.InNamespace(ns), client.MatchingLabels{discoveryv1.LabelServiceName: name}); err != nil {
		return 0, err
	}
	n := 0
	for _, sl := range slices.Items {
		for _, ep := range sl.Endpoints {
			if ep.Conditions.Ready != nil && *ep.Conditions.Ready {
				n++
			}
		}
	}
	return n, nil
}

// sampler samples a Service's ready endpoints every 200 ms until stopped.
type sampler struct {
	mu      sync.Mutex
	samples []int
	stop    chan struct{}
	done    chan struct{}
}

func sampleEndpoints(t *testing.T, s *stack.Stack, ns, name string) *sampler {
	sp := &sampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(sp.done)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			n, err := readyEndpoints(context.Background(), s, ns, name)
			if err != nil {
				t.Logf("sampling endpoints: %v", err)
				n = -1
			}
			sp.mu.Lock()
			sp.samples = append(sp.samples, n)
			sp.mu.Unlock()
			select {
			case <-sp.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return sp
}

func (sp *sampler) finish() []int {
	close(sp.stop)
	<-sp.done
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return append([]int(nil), sp.samples...)
}

// switchProxy forwards TCP connections to a backend until switched off: then its listener is
// closed, so connections are refused as from a stopped server, and reopened on the same port when
// switched on again.
type switchProxy struct {
	addr, backend string
	mu            sync.Mutex
	ln            net.Listener
	conns         map[net.Conn]bool // open client connections, closed when switched off
	wg            sync.WaitGroup
}

func newSwitchProxy(t *testing.T, backendURL string) *switchProxy {
	t.Helper()
	u, err := url.Parse(backendURL)
	if err != nil {
		t.Fatal(err)
	}
	p := &switchProxy{backend: u.Host}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.addr = ln.Addr().String()
	p.serve(ln)
	t.Cleanup(p.off)
	return p
}

func (p *switchProxy) URL() string { return "http://" + p.addr }

func (p *switchProxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.forward(c)
		}
	}()
}

func (p *switchProxy) forward(c net.Conn) {
	p.mu.Lock()
	if p.ln == nil {
		p.mu.Unlock()
		_ = c.Close()
		return
	}
	if p.conns == nil {
		p.conns = map[net.Conn]bool{}
	}
	p.conns[c] = true
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.conns, c)
		p.mu.Unlock()
		_ = c.Close()
	}()
	b, err := net.DialTimeout("tcp", p.backend, 2*time.Second)
	if err != nil {
		return
	}
	defer b.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(b, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, b); done <- struct{}{} }()
	<-done
}

// off stops accepting and cuts the open connections (kept alive by the HTTP client): new
// connections are refused.
func (p *switchProxy) off() {
	p.mu.Lock()
	ln := p.ln
	p.ln = nil
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	if ln != nil {
		_ = ln.Close()
		p.wg.Wait()
	}
}

// on listens again on the same address.
func (p *switchProxy) on(t *testing.T) {
	t.Helper()
	var ln net.Listener
	var err error
	for i := 0; i < 50; i++ {
		if ln, err = net.Listen("tcp", p.addr); err == nil {
			p.serve(ln)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("reopening the metrics proxy on %s: %v", p.addr, err)
}

// interval of the demo Canary's analysis.
const demoInterval = 10 * time.Second
