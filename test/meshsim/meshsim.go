// Package meshsim simulates a service mesh's data plane for end-to-end tests and the demo (it is
// not part of the manager). It reads the traffic split of one apex Service from the HTTPRoute or
// Istio VirtualService that Sluice manages, sends a steady simulated request rate split by those
// weights, answers each request as the version behind the chosen backend would, and exposes the
// resulting proxy metrics for Prometheus to scrape: Istio's istio_requests_total and
// istio_request_duration_milliseconds, and optionally Linkerd's response_total and
// response_latency_ms.
//
// The version behind a backend Service is the Deployment whose pod template its selector matches.
// That template's annotations set how the version behaves:
//
//	sim.sluice.dev/error-rate: "0.05"   fraction of requests answered with 500 (default 0)
//	sim.sluice.dev/latency-ms: "20"     mean latency in milliseconds (default 20)
//
// A backend whose Deployment has no ready replicas (or that has no Deployment) answers 503.
package meshsim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	istionetv1 "istio.io/client-go/pkg/apis/networking/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// Pod template annotations that set the simulated behaviour of a version.
const (
	AnnotationErrorRate = "sim.sluice.dev/error-rate"
	AnnotationLatencyMs = "sim.sluice.dev/latency-ms"
)

// DefaultLatencyMs is the mean latency of a version without AnnotationLatencyMs.
const DefaultLatencyMs = 20

// Flavor selects which mesh's metrics the simulator exposes; combine with |.
type Flavor int

const (
	// Istio exposes istio_requests_total and istio_request_duration_milliseconds (reporter
	// "destination").
	Istio Flavor = 1 << iota
	// Linkerd exposes request_total, response_total and response_latency_ms (direction "inbound").
	Linkerd
)

// Options configure a Sim.
type Options struct {
	// Namespace of the apex Service and its routes. Required.
	Namespace string
	// Service is the apex Service name; the backends are <Service>-primary and <Service>-canary
	// (sluicev1.Canary.ServiceNames). Required.
	Service string
	// Route is the name of the HTTPRoute or VirtualService to read. Default Service (the name of
	// generated routes); set it for a Canary's spec.service.routeRef.
	Route string
	// RPS is the simulated request rate. Default 50.
	RPS int
	// Listen is the metrics server's address. Default 127.0.0.1:0 (a free port).
	Listen string
	// Metrics selects the metric flavours. Default Istio.
	Metrics Flavor
	// Seed seeds the pseudo-random choices (backend, errors, latency). Default 1.
	Seed uint64
	// SourceWorkload is the simulated client's workload name (source_workload). Default "loadtester".
	SourceWorkload string
	// RefreshInterval is how often routes and Deployments are re-read. Default 250ms.
	RefreshInterval time.Duration
	// Logf receives a line whenever the observed split changes. Optional.
	Logf func(format string, args ...any)
}

// Backend is one weighted destination of the observed route and the version behind it.
type Backend struct {
	// Service is the backend Service name.
	Service string
	// Weight is the route's weight for it.
	Weight int32
	// Workload is the Deployment behind the Service ("" when there is none).
	Workload string
	// App and Version are the pod template's app and version labels ("unknown" when unset).
	App, Version string
	// ReadyReplicas of the Deployment; 0 means every request gets a 503.
	ReadyReplicas int32
	// ErrorRate is the fraction of requests answered with 500.
	ErrorRate float64
	// LatencyMs is the mean latency in milliseconds.
	LatencyMs float64
}

func (b Backend) String() string {
	return fmt.Sprintf("%s=%d(%s ready=%d err=%.2f lat=%.0fms)", b.Service, b.Weight, b.Workload, b.ReadyReplicas, b.ErrorRate, b.LatencyMs)
}

// Sim is a simulated data plane for one apex Service.
type Sim struct {
	opts    Options
	client  client.Client
	ln      net.Listener
	metrics *metrics
	rng     *rand.Rand

	mu sync.Mutex
	// overrides are error rates set by SetErrorRate, by workload.
	overrideMu sync.Mutex
	overrides  map[string]float64
	backends   []Backend
	source     string // what the split was read from, for logs
}

// Scheme returns the types the simulator reads: core, apps, Gateway API v1, Istio networking v1.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, gwv1.Install, istionetv1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}

// New validates opts, connects to the apiserver and opens the metrics listener (so URL is known
// before Run). Call Run to start the traffic and serve metrics.
// errors: missing Namespace or Service, client or listener errors.
func New(cfg *rest.Config, opts Options) (*Sim, error) {
	if opts.Namespace == "" || opts.Service == "" {
		return nil, errors.New("meshsim: Namespace and Service are required")
	}
	if opts.Route == "" {
		opts.Route = opts.Service
	}
	if opts.RPS <= 0 {
		opts.RPS = 50
	}
	if opts.Listen == "" {
		opts.Listen = "127.0.0.1:0"
	}
	if opts.Metrics == 0 {
		opts.Metrics = Istio
	}
	if opts.Seed == 0 {
		opts.Seed = 1
	}
	if opts.SourceWorkload == "" {
		opts.SourceWorkload = "loadtester"
	}
	if opts.RefreshInterval <= 0 {
		opts.RefreshInterval = 250 * time.Millisecond
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	// A refresh makes about four reads: lift client-go's default limit of 5 per second.
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = max(cfg.QPS, 50), max(cfg.Burst, 100)
	c, err := client.New(cfg, client.Options{Scheme: Scheme()})
	if err != nil {
		return nil, fmt.Errorf("meshsim: %w", err)
	}
	ln, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		return nil, fmt.Errorf("meshsim: %w", err)
	}
	return &Sim{
		opts:    opts,
		client:  c,
		ln:      ln,
		metrics: newMetrics(opts.Metrics),
		rng:     rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x5eed)),
	}, nil
}

// Addr is the metrics server's host:port.
func (s *Sim) Addr() string { return s.ln.Addr().String() }

// URL is the metrics endpoint, http://ADDR/metrics.
func (s *Sim) URL() string { return "http://" + s.Addr() + "/metrics" }

// Handler serves /metrics.
func (s *Sim) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", s.metrics.handler())
	return mux
}

// Backends returns the split and versions last observed (nil before the first read).
func (s *Sim) Backends() []Backend {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.backends)
}

// Run serves metrics and sends traffic until ctx ends: every 100 ms it sends RPS/10 requests split
// by the last observed weights, and every RefreshInterval it re-reads the route and Deployments.
// It returns nil when ctx ends. Call it once.
// errors: the metrics server failing.
func (s *Sim) Run(ctx context.Context) error {
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(s.ln) }()
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()

	s.refresh(ctx)
	refresh := time.NewTicker(s.opts.RefreshInterval)
	defer refresh.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	// Requests per tick may be fractional (RPS not a multiple of 10): carry the remainder.
	perTick, carry := float64(s.opts.RPS)/10, 0.0
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-served:
			return fmt.Errorf("meshsim: metrics server: %w", err)
		case <-refresh.C:
			s.refresh(ctx)
		case <-tick.C:
			carry += perTick
			n := int(carry)
			carry -= float64(n)
			s.send(n)
		}
	}
}

// send simulates n requests against the current backends.
func (s *Sim) send(n int) {
	s.mu.Lock()
	backends := s.backends
	s.mu.Unlock()
	var total int32
	for _, b := range backends {
		total += b.Weight
	}
	if total <= 0 {
		return
	}
	for range n {
		pick := s.rng.Int32N(total)
		var b *Backend
		for i := range backends {
			if pick < backends[i].Weight {
				b = &backends[i]
				break
			}
			pick -= backends[i].Weight
		}
		code, flags, latency := http.StatusOK, "-", 0.0
		switch {
		case b.ReadyReplicas <= 0:
			code, flags, latency = http.StatusServiceUnavailable, "UH", 0.5+s.rng.Float64()
		default:
			if s.rng.Float64() < b.ErrorRate {
				code = http.StatusInternalServerError
			}
			// Mean LatencyMs, shifted exponential: p50 ≈ 0.85×, p99 ≈ 2.8× the mean.
			latency = b.LatencyMs * (0.5 + 0.5*s.rng.ExpFloat64())
		}
		s.metrics.observe(s.opts, b, code, flags, latency)
	}
}

// refresh re-reads the split and the versions behind it. On API errors it keeps the last state.
func (s *Sim) refresh(ctx context.Context) {
	split, source, err := s.readSplit(ctx)
	if err == nil {
		var deployments appsv1.DeploymentList
		if err = s.client.List(ctx, &deployments, client.InNamespace(s.opts.Namespace)); err == nil {
			for i := range split {
				if err = s.resolve(ctx, &split[i], deployments.Items); err != nil {
					break
				}
			}
		}
	}
	if err != nil {
		if ctx.Err() == nil {
			s.opts.Logf("meshsim: reading %s/%s: %v", s.opts.Namespace, s.opts.Route, err)
		}
		return
	}
	s.mu.Lock()
	changed := source != s.source || !slices.Equal(split, s.backends)
	s.backends, s.source = split, source
	s.mu.Unlock()
	if changed {
		parts := make([]string, len(split))
		for i, b := range split {
			parts[i] = b.String()
		}
		s.opts.Logf("meshsim: %s: %s", source, strings.Join(parts, " "))
	}
}

// readSplit returns the weighted backends of the HTTPRoute named Route, else the VirtualService of
// that name, else all traffic to the apex Service.
func (s *Sim) readSplit(ctx context.Context) ([]Backend, string, error) {
	key := client.ObjectKey{Namespace: s.opts.Namespace, Name: s.opts.Route}
	var route gwv1.HTTPRoute
	err := s.client.Get(ctx, key, &route)
	switch {
	case err == nil:
		if split := s.httpRouteSplit(&route); split != nil {
			return split, "HTTPRoute " + key.String(), nil
		}
	case !notFound(err):
		return nil, "", err
	}
	var vs istionetv1.VirtualService
	err = s.client.Get(ctx, key, &vs)
	switch {
	case err == nil:
		if split := s.virtualServiceSplit(&vs); split != nil {
			return split, "VirtualService " + key.String(), nil
		}
	case !notFound(err):
		return nil, "", err
	}
	return []Backend{{Service: s.opts.Service, Weight: 1}}, "Service " + s.opts.Service + " (no route)", nil
}

// notFound is true for a missing object and for a kind whose CRD is not installed.
func notFound(err error) bool { return apierrors.IsNotFound(err) || meta.IsNoMatchError(err) }

// isManaged is true for the primary and canary backends of the apex Service.
func (s *Sim) isManaged(service string) bool {
	return service == s.opts.Service+"-primary" || service == s.opts.Service+"-canary"
}

// httpRouteSplit reads the rule that plain requests take: the first rule with a primary or canary
// backend and no header or query-parameter match; failing that, the first rule with one.
func (s *Sim) httpRouteSplit(route *gwv1.HTTPRoute) []Backend {
	var fallback []Backend
	for _, rule := range route.Spec.Rules {
		var split []Backend
		managed := false
		for _, ref := range rule.BackendRefs {
			if ref.Kind != nil && *ref.Kind != "Service" || ref.Group != nil && *ref.Group != "" {
				continue
			}
			w := int32(1)
			if ref.Weight != nil {
				w = *ref.Weight
			}
			name := string(ref.Name)
			managed = managed || s.isManaged(name)
			split = append(split, Backend{Service: name, Weight: w})
		}
		if !managed {
			continue
		}
		plain := len(rule.Matches) == 0
		for _, m := range rule.Matches {
			plain = plain || len(m.Headers) == 0 && len(m.QueryParams) == 0
		}
		if plain {
			return split
		}
		if fallback == nil {
			fallback = split
		}
	}
	return fallback
}

// virtualServiceSplit is httpRouteSplit for an Istio VirtualService (hosts may be short names or
// FQDNs; a lone destination without weight takes all traffic).
func (s *Sim) virtualServiceSplit(vs *istionetv1.VirtualService) []Backend {
	var fallback []Backend
	for _, h := range vs.Spec.GetHttp() {
		var split []Backend
		managed := false
		for _, d := range h.GetRoute() {
			name, _, _ := strings.Cut(d.GetDestination().GetHost(), ".")
			w := d.GetWeight()
			if len(h.GetRoute()) == 1 && w == 0 {
				w = 100
			}
			managed = managed || s.isManaged(name)
			split = append(split, Backend{Service: name, Weight: w})
		}
		if !managed {
			continue
		}
		plain := len(h.GetMatch()) == 0
		for _, m := range h.GetMatch() {
			plain = plain || len(m.GetHeaders()) == 0 && len(m.GetQueryParams()) == 0
		}
		if plain {
			return split
		}
		if fallback == nil {
			fallback = split
		}
	}
	return fallback
}

// resolve fills in the Deployment behind b.Service: the one whose pod template labels the
// Service's selector matches (with several, the one with most ready replicas, then by name).
func (s *Sim) resolve(ctx context.Context, b *Backend, deployments []appsv1.Deployment) error {
	b.App, b.Version, b.LatencyMs = "unknown", "unknown", DefaultLatencyMs
	var svc corev1.Service
	err := s.client.Get(ctx, client.ObjectKey{Namespace: s.opts.Namespace, Name: b.Service}, &svc)
	if apierrors.IsNotFound(err) || err == nil && len(svc.Spec.Selector) == 0 {
		return nil
	} else if err != nil {
		return err
	}
	sel := labels.SelectorFromSet(svc.Spec.Selector)
	var best *appsv1.Deployment
	for i := range deployments {
		d := &deployments[i]
		if d.DeletionTimestamp != nil || !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
			continue
		}
		if best == nil || d.Status.ReadyReplicas > best.Status.ReadyReplicas ||
			d.Status.ReadyReplicas == best.Status.ReadyReplicas && d.Name < best.Name {
			best = d
		}
	}
	if best == nil {
		return nil
	}
	tmpl := best.Spec.Template
	b.Workload, b.ReadyReplicas = best.Name, best.Status.ReadyReplicas
	if v := tmpl.Labels["app"]; v != "" {
		b.App = v
	}
	if v := tmpl.Labels["version"]; v != "" {
		b.Version = v
	}
	if v, err := strconv.ParseFloat(tmpl.Annotations[AnnotationErrorRate], 64); err == nil && v >= 0 && v <= 1 {
		b.ErrorRate = v
	}
	if v, err := strconv.ParseFloat(tmpl.Annotations[AnnotationLatencyMs], 64); err == nil && v >= 0 {
		b.LatencyMs = v
	}
	if v, ok := s.errorRateOverride(best.Name); ok {
		b.ErrorRate = v
	}
	return nil
}

// SetErrorRate makes the pods of Deployment workload answer rate (0–1) of their requests with
// 500 from now on, whatever their annotations say: the same version starting to fail (a
// dependency going down), without a new revision. A negative rate removes the override.
func (s *Sim) SetErrorRate(workload string, rate float64) {
	s.overrideMu.Lock()
	defer s.overrideMu.Unlock()
	if s.overrides == nil {
		s.overrides = map[string]float64{}
	}
	if rate < 0 {
		delete(s.overrides, workload)
		return
	}
	s.overrides[workload] = rate
}

func (s *Sim) errorRateOverride(workload string) (float64, bool) {
	s.overrideMu.Lock()
	defer s.overrideMu.Unlock()
	v, ok := s.overrides[workload]
	return v, ok
}
