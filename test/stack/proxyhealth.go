package stack

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"sluice.dev/sluice/test/injector"
)

// ProxyHealthMetric is the gauge the proxy-health exporter serves: proxy_health{namespace="ns"},
// 1 while the namespace's meshed pods are healthy, 0 once one of them runs a proxy version that
// breaks it (see ProxyHealth.Break).
const ProxyHealthMetric = "proxy_health"

// ProxyHealth is a metrics endpoint that simulates what a mesh's data plane tells Prometheus
// about each namespace: it reads the namespace's running pods at every scrape and reports 0 for
// a namespace when one of its pods runs a proxy version registered as breaking it, else 1. It
// lets the demo show an analysis that fails because of the new proxy, in one namespace only.
type ProxyHealth struct {
	c    client.Client
	addr string
	srv  *http.Server

	mu     sync.Mutex
	breaks map[string]string // namespace → proxy version that breaks it
	watch  []string
}

// startProxyHealth serves the exporter on a free local port for namespaces.
func startProxyHealth(c client.Client) (*ProxyHealth, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &ProxyHealth{c: c, addr: ln.Addr().String(), breaks: map[string]string{}}
	p.srv = &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(p.serve)}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// Addr is the scrape target.
func (p *ProxyHealth) Addr() string { return p.addr }

// Watch adds namespaces to report.
func (p *ProxyHealth) Watch(namespaces ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.watch = append(p.watch, namespaces...)
}

// Break makes proxy version break namespace ns: its gauge reads 0 while one of its pods runs it.
func (p *ProxyHealth) Break(ns, version string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.breaks[ns] = version
}

func (p *ProxyHealth) close() error { return p.srv.Close() }

func (p *ProxyHealth) serve(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	watch := append([]string(nil), p.watch...)
	breaks := map[string]string{}
	for k, v := range p.breaks {
		breaks[k] = v
	}
	p.mu.Unlock()
	sort.Strings(watch)
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	fmt.Fprintf(w, "# TYPE %s gauge\n", ProxyHealthMetric)
	for _, ns := range watch {
		health, err := p.health(r.Context(), ns, breaks[ns])
		if err != nil {
			continue // no sample: the analysis sees no data, never a pass
		}
		fmt.Fprintf(w, "%s{namespace=%q} %d\n", ProxyHealthMetric, ns, health)
	}
}

func (p *ProxyHealth) health(ctx context.Context, ns, bad string) (int, error) {
	var pods corev1.PodList
	if err := p.c.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		return 0, err
	}
	for _, pod := range pods.Items {
		if bad != "" && pod.Status.Phase == corev1.PodRunning && pod.Annotations[injector.AnnotationProxyVersion] == bad {
			return 0, nil
		}
	}
	return 1, nil
}
