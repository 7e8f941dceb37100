package analysis

import (
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// DefaultScrapeInterval is the Prometheus scrape interval assumed when none is configured.
const DefaultScrapeInterval = 15 * time.Second

// ValidateSpec reports what makes c's metrics impossible to evaluate as written: duplicate or empty
// metric names, a name that is neither a built-in nor backed by a templateRef, a metric with neither
// a threshold nor a primary comparison (it would always pass), an unparsable interval, minRequestCount on a MetricTemplate metric, an unknown mesh, onNoData or comparison
// direction, a negative maxDelta, or thresholdRange min > max. Most of these are also refused at
// admission; this catches objects written before a validation existed. errors: one error wrapping
// ErrInvalidSpec that lists every problem.
func ValidateSpec(c *sluicev1.Canary) error {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }

	if _, err := analysisInterval(c); err != nil {
		add("%v", err)
	}
	if _, ok := meshes[meshOf(c)]; !ok {
		add("unknown mesh %q (want istio, linkerd or envoy)", c.Spec.Mesh)
	}
	seen := map[string]bool{}
	for i := range c.Spec.Analysis.Metrics {
		m := &c.Spec.Analysis.Metrics[i]
		if m.Name == "" {
			add("metric %d has no name", i)
		} else if seen[m.Name] {
			add("metric name %q is used twice", m.Name)
		}
		seen[m.Name] = true
		if m.TemplateRef == nil && m.Query == "" && !isBuiltin(m.Name) {
			add("metric %q: not a built-in (%s, %s), and neither templateRef nor query is set", m.Name,
				sluicev1.MetricRequestSuccessRate, sluicev1.MetricRequestDuration)
		}
		if m.TemplateRef != nil && m.Query != "" {
			add("metric %q: set templateRef or query, not both", m.Name)
		}
		if len(m.Query) > MaxQueryLength {
			add("metric %q: query is %d bytes long, more than the %d allowed", m.Name, len(m.Query), MaxQueryLength)
		}
		if m.Query != "" && (m.CompareToPrimary != nil || m.MinRequestCount != nil) {
			add("metric %q: query is run as written: compareToPrimary and minRequestCount need a built-in metric or a MetricTemplate", m.Name)
		}
		if m.TemplateRef != nil && m.TemplateRef.Name == "" {
			add("metric %q: templateRef has no name", m.Name)
		}
		if m.Interval != "" {
			if _, err := parseInterval(m.Interval); err != nil {
				add("metric %q: interval: %v", m.Name, err)
			}
		}
		if m.MinRequestCount != nil && m.TemplateRef != nil {
			add("metric %q: minRequestCount applies to built-in metrics only, not to templateRef %q",
				m.Name, m.TemplateRef.Name)
		}
		switch m.OnNoData {
		case "", sluicev1.NoDataFail, sluicev1.NoDataSkip:
		default:
			add("metric %q: onNoData %q (want Fail or Skip)", m.Name, m.OnNoData)
		}
		if r := m.ThresholdRange; (r == nil || (r.Min == nil && r.Max == nil)) && m.CompareToPrimary == nil {
			add("metric %q: no thresholdRange min or max and no compareToPrimary: it would pass whatever it measures", m.Name)
		}
		if r := m.ThresholdRange; r != nil && r.Min != nil && r.Max != nil && *r.Min > *r.Max {
			add("metric %q: thresholdRange min %s > max %s", m.Name, formatBound(*r.Min), formatBound(*r.Max))
		}
		if cmp := m.CompareToPrimary; cmp != nil {
			switch cmp.Direction {
			case "", DirectionHigherIsBetter, DirectionLowerIsBetter:
			default:
				add("metric %q: compareToPrimary.direction %q (want %s or %s)", m.Name, cmp.Direction,
					DirectionHigherIsBetter, DirectionLowerIsBetter)
			}
			if cmp.MaxDelta < 0 {
				add("metric %q: compareToPrimary.maxDelta %s is negative", m.Name, formatBound(cmp.MaxDelta))
			}
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalidSpec, strings.Join(problems, "; "))
	}
	return nil
}

// ValidateIntervals reports metrics whose window (metric interval, default the analysis interval,
// default 1m) is shorter than twice scrapeInterval (DefaultScrapeInterval when zero or negative):
// rate() over such a window sees fewer than two samples and returns nothing. errors: one error
// wrapping ErrIntervalTooShort naming each such metric, its interval and the minimum; ErrInvalidSpec
// for an unparsable interval.
func ValidateIntervals(c *sluicev1.Canary, scrapeInterval time.Duration) error {
	if scrapeInterval <= 0 {
		scrapeInterval = DefaultScrapeInterval
	}
	minWindow := 2 * scrapeInterval
	var problems []string
	for i := range c.Spec.Analysis.Metrics {
		m := &c.Spec.Analysis.Metrics[i]
		w, err := metricWindow(c, m)
		if err != nil {
			return err
		}
		if w < minWindow {
			problems = append(problems, fmt.Sprintf("metric %q: interval %s is shorter than %s (twice the %s scrape interval)",
				m.Name, w, minWindow, scrapeInterval))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrIntervalTooShort, strings.Join(problems, "; "))
	}
	return nil
}

// analysisInterval returns spec.analysis.interval, default 1m. errors: ErrInvalidSpec.
func analysisInterval(c *sluicev1.Canary) (time.Duration, error) {
	if c.Spec.Analysis.Interval == "" {
		return sluicev1.DefaultAnalysisInterval, nil
	}
	d, err := parseInterval(c.Spec.Analysis.Interval)
	if err != nil {
		return 0, fmt.Errorf("%w: analysis.interval: %w", ErrInvalidSpec, err)
	}
	return d, nil
}

// metricWindow returns the query window of m: its interval, default the analysis interval.
// errors: ErrInvalidSpec.
func metricWindow(c *sluicev1.Canary, m *sluicev1.CanaryMetric) (time.Duration, error) {
	if m.Interval == "" {
		return analysisInterval(c)
	}
	d, err := parseInterval(m.Interval)
	if err != nil {
		return 0, fmt.Errorf("%w: metric %q: interval: %w", ErrInvalidSpec, m.Name, err)
	}
	return d, nil
}

// parseInterval parses a Go duration such as 1m or 1.5m, of at least one millisecond.
func parseInterval(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, err
	}
	if d < time.Millisecond {
		return 0, fmt.Errorf("%q is shorter than 1ms", s)
	}
	return d, nil
}

// promDuration formats d for a PromQL range selector, e.g. 1m, 1m30s or 1500ms: PromQL does not
// accept fractions such as 1.5m, which Go durations and the CRD do.
func promDuration(d time.Duration) string {
	return model.Duration(d.Truncate(time.Millisecond)).String()
}
