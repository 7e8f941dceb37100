package analysis

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/common/model"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// plan is what one metric check runs: the queries, rendered, and where.
type plan struct {
	srv          server
	query        string // canary value
	primaryQuery string // primary value; only with compareToPrimary
	countQuery   string // canary request count; only with minRequestCount
	window       string // PromQL duration of the metric window
	subject      string // who served the requests, in messages; "canary" when empty
}

// serverFor returns the server metric m queries and, for template metrics, the MetricTemplate:
// the template's provider address, else spec.metricsServer, else Options.DefaultAddress, with the
// template's credentials and TLS setting. A template's credentials go only to its own address;
// built-in metrics and inline queries use the latter two. errors: ErrNoMetricsServer,
// ErrTemplate, API errors.
func (e *Engine) serverFor(ctx context.Context, c *sluicev1.Canary, m *sluicev1.CanaryMetric) (server, *sluicev1.MetricTemplate, error) {
	var tpl *sluicev1.MetricTemplate
	if m.TemplateRef != nil {
		var err error
		if tpl, err = e.getTemplate(ctx, c, m); err != nil {
			return server{}, nil, err
		}
	}
	s, err := e.templateServer(ctx, tpl, c.Spec.MetricsServer)
	if err != nil {
		return server{}, nil, err
	}
	return s, tpl, nil
}

// planFor renders the queries of metric m for a check at now, over the window runWindow returns,
// and confines a tenant's query to the Canary's namespace (confine). errors: ErrNoMetricsServer,
// ErrTemplate, ErrInvalidSpec, ErrInvalidQuery, API errors.
func (e *Engine) planFor(ctx context.Context, c *sluicev1.Canary, m *sluicev1.CanaryMetric, w time.Duration) (plan, error) {
	var err error
	p := plan{window: promDuration(w)}
	var tpl *sluicev1.MetricTemplate
	if p.srv, tpl, err = e.serverFor(ctx, c, m); err != nil {
		return plan{}, err
	}
	switch {
	case tpl != nil:
		if err := p.renderTemplate(c, m, tpl); err != nil {
			return plan{}, err
		}
		return p, e.confine(&p, c, tpl.Namespace)
	case m.Query != "":
		p.query = m.Query // Flagger's inline query: run as written, confined to a tenant's namespace
		return p, e.confine(&p, c, c.Namespace)
	}
	return p, p.renderBuiltin(c, m)
}

func (p *plan) renderTemplate(c *sluicev1.Canary, m *sluicev1.CanaryMetric, tpl *sluicev1.MetricTemplate) error {
	var err error
	where := fmt.Sprintf("MetricTemplate %s/%s", tpl.Namespace, tpl.Name)
	if p.query, err = RenderQuery(tpl.Spec.Query, templateVars(c, m, c.Spec.TargetRef.Name, p.window)); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	if m.CompareToPrimary != nil {
		vars := templateVars(c, m, c.Spec.TargetRef.Name+"-primary", p.window)
		if p.primaryQuery, err = RenderQuery(tpl.Spec.Query, vars); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
	}
	return nil
}

func (p *plan) renderBuiltin(c *sluicev1.Canary, m *sluicev1.CanaryMetric) error {
	mesh := meshOf(c)
	var err error
	if p.query, err = builtinQuery(mesh, m.Name, canaryWorkload(c), p.window); err != nil {
		return err
	}
	if m.CompareToPrimary != nil {
		if p.primaryQuery, err = builtinQuery(mesh, m.Name, primaryWorkload(c), p.window); err != nil {
			return err
		}
	}
	if m.MinRequestCount != nil {
		if p.countQuery, err = requestCountQuery(mesh, canaryWorkload(c), p.window); err != nil {
			return err
		}
	}
	return nil
}

// evaluate checks one metric at now. It never fails: problems become Error verdicts.
func (e *Engine) evaluate(ctx context.Context, c *sluicev1.Canary, m *sluicev1.CanaryMetric, now time.Time) sluicev1.MetricResult {
	res := newResult(m, now)
	w, clipped, err := e.runWindow(c, m, now)
	if err != nil {
		return withError(res, err)
	}
	res.Window = promDuration(w)
	res.WindowStart = &metav1.Time{Time: now.Add(-w)}
	if clipped && w < 2*e.opts.ScrapeInterval {
		// Too little of the run to judge yet: rate() over it would see fewer than two samples.
		res.Verdict = sluicev1.VerdictSkipped
		res.Message = fmt.Sprintf("the run started %s ago; the metric window must not reach back before it and needs at least %s (twice the scrape interval)",
			promDuration(w), 2*e.opts.ScrapeInterval)
		return res
	}
	p, err := e.planFor(ctx, c, m, w)
	if err != nil {
		return withError(res, err)
	}
	res.Query = p.query
	res = e.judge(ctx, res, p, m, now)
	if clipped && res.Message != "" {
		res.Message += fmt.Sprintf(" (window %s, clipped to the run's start)", p.window)
	}
	return res
}

// runWindow returns metric m's window for a check at now: its interval (default the analysis
// interval), clipped so that it never starts before the run (status.runStartTime), so a run is
// judged on its own traffic only, never on a previous run's. clipped reports whether it was
// shortened. errors: ErrInvalidSpec.
func (e *Engine) runWindow(c *sluicev1.Canary, m *sluicev1.CanaryMetric, now time.Time) (w time.Duration, clipped bool, err error) {
	if w, err = metricWindow(c, m); err != nil {
		return 0, false, err
	}
	if start := c.Status.RunStartTime; start != nil && now.Add(-w).Before(start.Time) {
		w = now.Sub(start.Time).Truncate(time.Millisecond)
		if w < 0 {
			w = 0
		}
		return w, true, nil
	}
	return w, false, nil
}

// judge runs the queries of plan p for metric m at now and fills in res: the request-count gate,
// the value against the threshold range, and the primary comparison when p has one. It never
// fails: problems become Error verdicts.
func (e *Engine) judge(ctx context.Context, res sluicev1.MetricResult, p plan, m *sluicev1.CanaryMetric, now time.Time) sluicev1.MetricResult {
	if p.countQuery != "" {
		v, err := e.query(ctx, p.srv, p.countQuery, now)
		if err != nil {
			return withError(res, fmt.Errorf("request count: %w", err))
		}
		n, err := SampleValue(v)
		if errors.Is(err, ErrNoData) {
			n, err = 0, nil
		}
		if err != nil {
			return withError(res, fmt.Errorf("request count: %w", err))
		}
		if minCount := *m.MinRequestCount; n < float64(minCount) {
			res.Verdict = sluicev1.VerdictSkipped
			res.Query = p.countQuery
			subject := p.subject
			if subject == "" {
				subject = "canary"
			}
			res.Message = fmt.Sprintf("%s served %.0f requests in the last %s, fewer than minRequestCount %d",
				subject, n, p.window, minCount)
			return res
		}
	}

	value, err := e.value(ctx, p.srv, p.query, now)
	if err != nil {
		return withNoDataOrError(res, m, err)
	}
	res.Value = FormatValue(value)
	res.Verdict, res.Message = judgeThreshold(value, m.ThresholdRange)
	if m.CompareToPrimary == nil || p.primaryQuery == "" {
		return res
	}

	primary, err := e.value(ctx, p.srv, p.primaryQuery, now)
	if err != nil {
		if res.Verdict == sluicev1.VerdictFail {
			res.Message += fmt.Sprintf("; primary not compared: %v", err)
			return res
		}
		return withNoDataOrError(res, m, fmt.Errorf("primary: %w", err))
	}
	res.PrimaryValue = FormatValue(primary)
	if res.Verdict == sluicev1.VerdictFail {
		return res
	}
	res.Verdict, res.Message = judgeComparison(m.Name, value, primary, m.CompareToPrimary)
	return res
}

// value runs q and extracts its one number. The labels of a result with several series go to the
// debug log only. errors: those of query and SampleValue.
func (e *Engine) value(ctx context.Context, s server, q string, now time.Time) (float64, error) {
	v, err := e.query(ctx, s, q, now)
	if err != nil {
		return 0, err
	}
	if vec, ok := v.(model.Vector); ok && len(vec) > 1 {
		log.FromContext(ctx).V(1).Info("Query returned several series", "query", q, "series", seriesList(vec))
	}
	return SampleValue(v)
}

// newResult is the result of metric m checked at now, before it is judged.
func newResult(m *sluicev1.CanaryMetric, now time.Time) sluicev1.MetricResult {
	return sluicev1.MetricResult{
		Name:           m.Name,
		ThresholdRange: FormatRange(m.ThresholdRange),
		CheckedAt:      &metav1.Time{Time: now},
	}
}

func withError(res sluicev1.MetricResult, err error) sluicev1.MetricResult {
	res.Verdict = sluicev1.VerdictError
	res.Message = err.Error()
	return res
}

// withNoDataOrError turns ErrNoData into NoData (Skipped with onNoData Skip) and anything else
// into Error.
func withNoDataOrError(res sluicev1.MetricResult, m *sluicev1.CanaryMetric, err error) sluicev1.MetricResult {
	if !errors.Is(err, ErrNoData) {
		return withError(res, err)
	}
	res.Message = err.Error()
	res.Verdict = sluicev1.VerdictNoData
	if m.OnNoData == sluicev1.NoDataSkip {
		res.Verdict = sluicev1.VerdictSkipped
		res.Message += "; onNoData is Skip"
	}
	return res
}
