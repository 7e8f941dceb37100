package analysis

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/egress"
	"sluice.dev/sluice/tenancy"
)

// Options configure an Engine.
type Options struct {
	// DefaultAddress is the Prometheus address used when neither the MetricTemplate nor the
	// Canary's spec.metricsServer names one (the controller's --metrics-server flag), e.g.
	// http://prometheus.monitoring:9090. Empty means no default.
	DefaultAddress string
	// ScrapeInterval is the Prometheus scrape interval; metric windows must be at least twice as
	// long (see ValidateIntervals). Default 15s.
	ScrapeInterval time.Duration
	// QueryTimeout bounds one query, client and server side. Default 10s.
	QueryTimeout time.Duration
	// MaxConcurrentMetrics bounds how many metrics of one Analyze call are queried at the same
	// time. Default 4.
	MaxConcurrentMetrics int
	// CheckTimeout bounds one check as a whole (Evaluate, AnalyzeNamespace), however many metrics
	// and servers it has: a metric not judged by then is an Error verdict, so a check never holds
	// a worker longer. Default QueryTimeout.
	CheckTimeout time.Duration
	// ReadyTimeout bounds Ready as a whole: every server is asked at the same time, and one that
	// has not answered by then is unreachable. Default 3s, at most QueryTimeout.
	ReadyTimeout time.Duration
	// MaxMetricsServers caps the distinct metrics server addresses the metrics of one Canary use;
	// a Canary using more is refused (ErrTooManyServers) before any is asked. Default 4.
	MaxMetricsServers int
	// TenantNamespaceLabel, when set, confines every query a tenant wrote (an inline query, a
	// MetricTemplate outside Refs.ControllerNamespace) to the Canary's namespace: each series
	// selector gets the matcher TenantNamespaceLabel="<the Canary's namespace>" (confine.go).
	// Empty: such queries run as written.
	TenantNamespaceLabel string
	// Egress is the outbound destination policy every metrics server address must pass; its
	// clients follow no redirects. Nil: the default policy (egress.Options{}).
	Egress *egress.Policy
	// Refs decides which namespaces a Canary's templateRef may name. The zero value allows only
	// the Canary's own.
	Refs tenancy.RefPolicy
}

// Engine evaluates a Canary's metrics against Prometheus. It is safe for concurrent use by
// several reconciles and keeps one HTTP client per (address, credentials, TLS setting).
type Engine struct {
	reader  client.Reader
	opts    Options
	clients *clientCache
}

// NewEngine returns an Engine that reads MetricTemplates and their credential Secrets with reader
// (a cached client is fine) and fills in the defaults of opts.
func NewEngine(reader client.Reader, opts Options) *Engine {
	if opts.ScrapeInterval <= 0 {
		opts.ScrapeInterval = DefaultScrapeInterval
	}
	if opts.QueryTimeout <= 0 {
		opts.QueryTimeout = 10 * time.Second
	}
	if opts.MaxConcurrentMetrics <= 0 {
		opts.MaxConcurrentMetrics = 4
	}
	if opts.CheckTimeout <= 0 {
		opts.CheckTimeout = opts.QueryTimeout
	}
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = min(DefaultReadyTimeout, opts.QueryTimeout)
	}
	if opts.MaxMetricsServers <= 0 {
		opts.MaxMetricsServers = DefaultMaxMetricsServers
	}
	return &Engine{reader: reader, opts: opts, clients: newClientCache(opts.Egress)}
}

// Analyze evaluates every metric of canary.Spec.Analysis.Metrics with instant queries at now and
// returns one MetricResult per metric, in spec order: Pass, Fail, NoData, Skipped or Error, with
// the value (2 decimals), the primary's value when compared, the threshold range, the rendered
// query and a message explaining the verdict. A metric costs one query, two with compareToPrimary,
// plus one request-count query when minRequestCount is set.
//
// Problems of one metric (an unreachable Prometheus, a missing MetricTemplate, a bad result) are
// Error verdicts whose message gives the reason and the address. errors: ErrInvalidSpec and
// ErrIntervalTooShort when the spec cannot be evaluated; ctx's error when ctx ends before every
// metric is done (the partial check is not returned, so it is not counted).
func (e *Engine) Analyze(ctx context.Context, canary *sluicev1.Canary, now time.Time) (Check, error) {
	if err := e.Validate(canary); err != nil {
		return Check{}, err
	}
	return e.Evaluate(ctx, canary, now)
}

// Validate reports what makes canary's analysis impossible to evaluate as written: ValidateSpec,
// then ValidateIntervals with the engine's scrape interval (the one place that interval is
// configured). It does no I/O. errors: ErrInvalidSpec, ErrIntervalTooShort.
func (e *Engine) Validate(canary *sluicev1.Canary) error {
	if err := ValidateSpec(canary); err != nil {
		return err
	}
	return ValidateIntervals(canary, e.opts.ScrapeInterval)
}

// Evaluate is Analyze for a canary that passed Validate (the canary controller validates once per
// tick, then evaluates when a check is due). The metrics are queried MaxConcurrentMetrics at a
// time within CheckTimeout; a metric not judged by then is an Error verdict. errors:
// ErrTooManyServers (nothing is queried); ctx's error when ctx ends before every metric is done.
func (e *Engine) Evaluate(ctx context.Context, canary *sluicev1.Canary, now time.Time) (Check, error) {
	if err := e.checkServerCap(e.metricServers(ctx, canary)); err != nil {
		return Check{}, err
	}
	metrics := canary.Spec.Analysis.Metrics
	results := e.evaluateAll(ctx, metrics, now, func(ctx context.Context, m *sluicev1.CanaryMetric) sluicev1.MetricResult {
		return e.evaluate(ctx, canary, m, now)
	})
	if err := ctx.Err(); err != nil {
		return Check{}, fmt.Errorf("analysis of %s/%s interrupted: %w", canary.Namespace, canary.Name, err)
	}
	check := Check{Results: results}
	log.FromContext(ctx).V(1).Info("Analysed metrics", "metrics", len(results), "failed", check.Failed())
	return check, nil
}

// evaluateAll judges every metric with eval, MaxConcurrentMetrics at a time, within CheckTimeout:
// a metric whose turn comes after it is an Error verdict, and a query running then is cut short
// (an Error verdict too). Returns one result per metric, in order.
func (e *Engine) evaluateAll(ctx context.Context, metrics []sluicev1.CanaryMetric, now time.Time,
	eval func(context.Context, *sluicev1.CanaryMetric) sluicev1.MetricResult) []sluicev1.MetricResult {
	ctx, cancel := context.WithTimeout(ctx, e.opts.CheckTimeout)
	defer cancel()
	results := make([]sluicev1.MetricResult, len(metrics))
	sem := make(chan struct{}, e.opts.MaxConcurrentMetrics)
	var wg sync.WaitGroup
	for i := range metrics {
		if ctx.Err() == nil {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
			}
		}
		if ctx.Err() != nil {
			results[i] = withError(newResult(&metrics[i], now),
				fmt.Errorf("not queried: the check took longer than its %s budget (slow or unreachable metrics servers)", e.opts.CheckTimeout))
			continue
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			results[i] = eval(ctx, &metrics[i])
		}()
	}
	wg.Wait()
	return results
}

// Ready checks that every metrics server canary's metrics use answers a trivial query
// (vector(1)), so a Canary can wait at initialization instead of failing its first checks. The
// servers are asked at the same time, within ReadyTimeout. Returns nil when all answer or there
// are no metrics. errors: ErrTooManyServers (none is asked); for each server that does not
// answer, an error wrapping ErrUnreachable that names the address and the reason (joined with
// errors.Join); egress.ErrRefused for an address the egress policy refuses; ErrNoMetricsServer,
// ErrTemplate, tenancy.ErrCrossNamespaceRef or API errors when a server cannot be determined.
func (e *Engine) Ready(ctx context.Context, canary *sluicev1.Canary) error {
	resolved := e.metricServers(ctx, canary)
	if err := e.checkServerCap(resolved); err != nil {
		return err
	}
	servers := map[clientKey]server{}
	var order []clientKey
	var errs []error
	for _, ms := range resolved {
		if ms.err != nil {
			errs = append(errs, fmt.Errorf("metric %q: %w", ms.metric, ms.err))
			continue
		}
		if _, ok := servers[ms.srv.key()]; !ok {
			servers[ms.srv.key()] = ms.srv
			order = append(order, ms.srv.key())
		}
	}
	ctx, cancel := context.WithTimeout(ctx, e.opts.ReadyTimeout)
	defer cancel()
	answers := make([]error, len(order))
	var wg sync.WaitGroup
	for i, k := range order {
		wg.Go(func() {
			s := servers[k]
			if _, err := e.query(ctx, s, "vector(1)", time.Time{}); err != nil {
				if !errors.Is(err, ErrUnreachable) && !errors.Is(err, egress.ErrRefused) {
					err = fmt.Errorf("%w: %s: %w", ErrUnreachable, redacted(s.address), err)
				}
				answers[i] = err
			}
		})
	}
	wg.Wait()
	return errors.Join(append(errs, answers...)...)
}
