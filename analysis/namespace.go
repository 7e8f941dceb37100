package analysis

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// NamespaceAnalysis is the analysis of a whole namespace, as a DataPlane runs it for every
// namespace of a baking wave. Built-in metrics read the namespace's inbound traffic:
//
//   - linkerd: response_total and response_latency_ms_bucket with direction="inbound" and
//     namespace=NAMESPACE (every meshed workload of the namespace);
//   - istio: istio_requests_total and istio_request_duration_milliseconds_bucket with
//     reporter="destination" and destination_workload_namespace=NAMESPACE.
//
// MetricTemplates see {{ .name }} (Name), {{ .namespace }} (Namespace), {{ .interval }} and
// {{ .variables.KEY }}; {{ .target }} and {{ .service }} are empty. compareToPrimary does not apply
// (a namespace has no primary).
type NamespaceAnalysis struct {
	// Name of the object the analysis runs for (a DataPlane), {{ .name }} in templates.
	Name string
	// Namespace analysed.
	Namespace string
	// Mesh whose built-in metrics are read: linkerd or istio.
	Mesh sluicev1.Mesh
	// Metrics to evaluate.
	Metrics []sluicev1.CanaryMetric
	// Interval is the default metric window. Default 1m.
	Interval time.Duration
	// MetricsServer is the Prometheus address for built-in metrics and templates without one;
	// empty means Options.DefaultAddress.
	MetricsServer string
	// TemplateNamespace is where a templateRef without a namespace is looked up.
	TemplateNamespace string
}

// namespaceSelectors select a namespace's inbound traffic in each mesh's metrics.
var namespaceSelectors = map[sluicev1.Mesh]func(ns string) string{
	sluicev1.MeshLinkerd: func(ns string) string {
		return fmt.Sprintf(`direction="inbound",namespace="%s"`, EscapeString(ns))
	},
	sluicev1.MeshIstio: func(ns string) string {
		return fmt.Sprintf(`reporter="destination",destination_workload_namespace="%s"`, EscapeString(ns))
	},
}

// NamespaceQuery returns the PromQL of built-in metric name for the whole namespace ns in mesh
// over window (a PromQL duration such as 1m): request-success-rate in percent 0–100,
// request-duration as P99 in milliseconds. errors: ErrInvalidSpec for a mesh without namespace
// built-ins (envoy) or an unknown metric name.
func NamespaceQuery(mesh sluicev1.Mesh, name, ns, window string) (string, error) {
	sel, ok := namespaceSelectors[mesh]
	if !ok {
		return "", fmt.Errorf("%w: mesh %q has no per-namespace built-in metrics (want linkerd or istio)", ErrInvalidSpec, mesh)
	}
	return meshes[mesh].builtin(name, sel(ns), window)
}

// ValidateNamespaceAnalysis reports what makes a's metrics impossible to evaluate: the problems
// ValidateSpec finds for Canaries that apply here, compareToPrimary, minRequestCount on a
// template, a mesh without namespace built-ins, and metric windows shorter than twice
// scrapeInterval (DefaultScrapeInterval when zero or negative). errors: one error wrapping
// ErrInvalidSpec or ErrIntervalTooShort that lists every problem.
func ValidateNamespaceAnalysis(a NamespaceAnalysis, scrapeInterval time.Duration) error {
	if scrapeInterval <= 0 {
		scrapeInterval = DefaultScrapeInterval
	}
	var problems, short []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	seen := map[string]bool{}
	for i := range a.Metrics {
		m := &a.Metrics[i]
		switch {
		case m.Name == "":
			add("metric %d has no name", i)
		case seen[m.Name]:
			add("metric name %q is used twice", m.Name)
		}
		seen[m.Name] = true
		switch {
		case m.Query != "":
			add("metric %q: an inline query is the same for every namespace; use a MetricTemplate (rendered per namespace)", m.Name)
		case m.TemplateRef == nil:
			if !isBuiltin(m.Name) {
				add("metric %q: not a built-in (%s, %s) and no templateRef", m.Name,
					sluicev1.MetricRequestSuccessRate, sluicev1.MetricRequestDuration)
			} else if _, ok := namespaceSelectors[a.Mesh]; !ok {
				add("metric %q: mesh %q has no per-namespace built-in metrics", m.Name, a.Mesh)
			}
		default:
			if m.TemplateRef.Name == "" {
				add("metric %q: templateRef has no name", m.Name)
			}
			if m.MinRequestCount != nil {
				add("metric %q: minRequestCount applies to built-in metrics only", m.Name)
			}
		}
		if m.CompareToPrimary != nil {
			add("metric %q: compareToPrimary does not apply to a namespace", m.Name)
		}
		switch m.OnNoData {
		case "", sluicev1.NoDataFail, sluicev1.NoDataSkip:
		default:
			add("metric %q: onNoData %q (want Fail or Skip)", m.Name, m.OnNoData)
		}
		w, err := namespaceWindow(a, m)
		if err != nil {
			add("%v", err)
		} else if w < 2*scrapeInterval {
			short = append(short, fmt.Sprintf("metric %q: interval %s is shorter than %s (twice the %s scrape interval)",
				m.Name, w, 2*scrapeInterval, scrapeInterval))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalidSpec, strings.Join(problems, "; "))
	}
	if len(short) > 0 {
		return fmt.Errorf("%w: %s", ErrIntervalTooShort, strings.Join(short, "; "))
	}
	return nil
}

// AnalyzeNamespace evaluates every metric of a for namespace a.Namespace with instant queries at
// now and returns one MetricResult per metric, in order, judged exactly as Analyze judges a
// Canary's (thresholds, no data, minRequestCount, errors naming the address), within
// CheckTimeout.
// errors: ErrInvalidSpec and ErrIntervalTooShort (see ValidateNamespaceAnalysis); ctx's error when
// ctx ends before every metric is done.
func (e *Engine) AnalyzeNamespace(ctx context.Context, a NamespaceAnalysis, now time.Time) (Check, error) {
	if err := ValidateNamespaceAnalysis(a, e.opts.ScrapeInterval); err != nil {
		return Check{}, err
	}
	results := e.evaluateAll(ctx, a.Metrics, now, func(ctx context.Context, m *sluicev1.CanaryMetric) sluicev1.MetricResult {
		return e.evaluateNamespace(ctx, a, m, now)
	})
	if err := ctx.Err(); err != nil {
		return Check{}, fmt.Errorf("analysis of namespace %s interrupted: %w", a.Namespace, err)
	}
	check := Check{Results: results}
	log.FromContext(ctx).V(1).Info("Analysed namespace", "namespace", a.Namespace, "metrics", len(results), "failed", check.Failed())
	return check, nil
}

func (e *Engine) evaluateNamespace(ctx context.Context, a NamespaceAnalysis, m *sluicev1.CanaryMetric, now time.Time) sluicev1.MetricResult {
	res := newResult(m, now)
	p, err := e.namespacePlan(ctx, a, m)
	if err != nil {
		return withError(res, err)
	}
	res.Query = p.query
	return e.judge(ctx, res, p, m, now)
}

// namespacePlan renders the queries of metric m for a.Namespace. errors: ErrNoMetricsServer,
// ErrTemplate, ErrInvalidSpec, API errors.
func (e *Engine) namespacePlan(ctx context.Context, a NamespaceAnalysis, m *sluicev1.CanaryMetric) (plan, error) {
	w, err := namespaceWindow(a, m)
	if err != nil {
		return plan{}, err
	}
	p := plan{window: promDuration(w), subject: "namespace " + a.Namespace}
	if m.TemplateRef != nil {
		tpl, err := e.namespaceTemplate(ctx, a, m)
		if err != nil {
			return plan{}, err
		}
		if p.srv, err = e.templateServer(ctx, tpl, a.MetricsServer); err != nil {
			return plan{}, err
		}
		vars := TemplateVars{Name: a.Name, Namespace: a.Namespace, Interval: p.window, Variables: m.TemplateVariables}
		if p.query, err = RenderQuery(tpl.Spec.Query, vars); err != nil {
			return plan{}, fmt.Errorf("MetricTemplate %s/%s: %w", tpl.Namespace, tpl.Name, err)
		}
		return p, nil
	}
	if p.srv, err = e.templateServer(ctx, nil, a.MetricsServer); err != nil {
		return plan{}, err
	}
	if p.query, err = NamespaceQuery(a.Mesh, m.Name, a.Namespace, p.window); err != nil {
		return plan{}, err
	}
	if m.MinRequestCount != nil {
		sel := namespaceSelectors[a.Mesh](a.Namespace)
		p.countQuery = fmt.Sprintf(`sum(increase(%s{%s}[%s]))`, meshes[a.Mesh].requests, sel, p.window)
	}
	return p, nil
}

// templateServer returns the server for a MetricTemplate (nil for built-ins): the template's
// address with its credentials, else fallback, else Options.DefaultAddress. Credentials are only
// ever paired with the template's own address: a template with secretRef and no address (refused
// at admission; possible for objects written before that rule) is an error, never a fallback.
// errors: ErrNoMetricsServer, ErrTemplate, credential errors.
func (e *Engine) templateServer(ctx context.Context, tpl *sluicev1.MetricTemplate, fallback string) (server, error) {
	var s server
	if tpl != nil {
		pr := tpl.Spec.Provider
		if pr.Type != "" && pr.Type != "prometheus" {
			return server{}, fmt.Errorf("%w: MetricTemplate %s/%s: provider type %q is not supported (want prometheus)",
				ErrTemplate, tpl.Namespace, tpl.Name, pr.Type)
		}
		s.address, s.insecureSkipVerify = pr.Address, pr.InsecureSkipVerify
		if pr.SecretRef != nil {
			if pr.Address == "" {
				return server{}, fmt.Errorf("%w: MetricTemplate %s/%s has provider.secretRef but no provider.address: "+
					"its credentials are sent only to its own address", ErrTemplate, tpl.Namespace, tpl.Name)
			}
			var err error
			if s.creds, err = e.readCredentials(ctx, tpl.Namespace, pr.SecretRef.Name); err != nil {
				return server{}, err
			}
		}
	}
	for _, addr := range []string{fallback, e.opts.DefaultAddress} {
		if s.address == "" {
			s.address = addr
		}
	}
	if s.address == "" {
		return server{}, fmt.Errorf("%w: set the MetricTemplate's provider.address, the Canary's spec.metricsServer (a namespace analysis' metricsServer) or the controller's default",
			ErrNoMetricsServer)
	}
	return s, nil
}

// namespaceTemplate reads the MetricTemplate of m: templateRef.namespace, else a.TemplateNamespace.
// errors: ErrTemplate (no namespace, not found), other API errors.
func (e *Engine) namespaceTemplate(ctx context.Context, a NamespaceAnalysis, m *sluicev1.CanaryMetric) (*sluicev1.MetricTemplate, error) {
	key := types.NamespacedName{Namespace: m.TemplateRef.Namespace, Name: m.TemplateRef.Name}
	if key.Namespace == "" {
		key.Namespace = a.TemplateNamespace
	}
	if key.Namespace == "" {
		return nil, fmt.Errorf("%w: metric %q: templateRef %q needs a namespace", ErrTemplate, m.Name, key.Name)
	}
	var tpl sluicev1.MetricTemplate
	if err := e.reader.Get(ctx, key, &tpl); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("%w: MetricTemplate %s not found", ErrTemplate, key)
		}
		return nil, fmt.Errorf("reading MetricTemplate %s: %w", key, err)
	}
	return &tpl, nil
}

// namespaceWindow is metric m's window: its interval, else a.Interval, else 1m.
func namespaceWindow(a NamespaceAnalysis, m *sluicev1.CanaryMetric) (time.Duration, error) {
	if m.Interval != "" {
		d, err := parseInterval(m.Interval)
		if err != nil {
			return 0, fmt.Errorf("%w: metric %q: interval: %w", ErrInvalidSpec, m.Name, err)
		}
		return d, nil
	}
	if a.Interval > 0 {
		return a.Interval, nil
	}
	return sluicev1.DefaultAnalysisInterval, nil
}
