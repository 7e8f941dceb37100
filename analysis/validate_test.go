package analysis

import (
	"errors"
	"strings"
	"testing"
	"time"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

func TestValidateIntervals(t *testing.T) {
	withInterval := func(m sluicev1.CanaryMetric, i string) sluicev1.CanaryMetric { m.Interval = i; return m }
	for _, tc := range []struct {
		name     string
		analysis string
		metrics  []sluicev1.CanaryMetric
		scrape   time.Duration
		err      error
		msg      string
	}{
		{"default 1m analysis interval, 15s scrapes", "", []sluicev1.CanaryMetric{successRate(1)}, 15 * time.Second, nil, ""},
		{"exactly twice", "30s", []sluicev1.CanaryMetric{successRate(1)}, 15 * time.Second, nil, ""},
		{"zero scrape interval means 15s", "29s", []sluicev1.CanaryMetric{successRate(1)}, 0, ErrIntervalTooShort, "shorter than 30s"},
		{"analysis interval too short", "20s", []sluicev1.CanaryMetric{successRate(1)}, 15 * time.Second, ErrIntervalTooShort,
			`metric "request-success-rate": interval 20s is shorter than 30s (twice the 15s scrape interval)`},
		{"metric interval overrides", "10s", []sluicev1.CanaryMetric{withInterval(successRate(1), "1.5m")}, 30 * time.Second, nil, ""},
		{"metric interval too short", "5m", []sluicev1.CanaryMetric{successRate(1), withInterval(duration(1), "1m")}, time.Minute, ErrIntervalTooShort,
			`metric "request-duration": interval 1m0s is shorter than 2m0s`},
		{"unparsable", "", []sluicev1.CanaryMetric{withInterval(successRate(1), "soon")}, 15 * time.Second, ErrInvalidSpec, "soon"},
		{"no metrics", "1s", nil, time.Minute, nil, ""},
	} {
		c := newCanary("x", "", tc.metrics...)
		c.Spec.Analysis.Interval = tc.analysis
		err := ValidateIntervals(c, tc.scrape)
		if !errors.Is(err, tc.err) || (err != nil && !strings.Contains(err.Error(), tc.msg)) {
			t.Errorf("%s: err = %v, want %v containing %q", tc.name, err, tc.err, tc.msg)
		}
	}
}

func TestValidateSpec(t *testing.T) {
	bad := func(mutate func(c *sluicev1.Canary), msg string) {
		t.Helper()
		c := newCanary("x", "", successRate(1))
		mutate(c)
		err := ValidateSpec(c)
		if !errors.Is(err, ErrInvalidSpec) || !strings.Contains(err.Error(), msg) {
			t.Errorf("err = %v, want ErrInvalidSpec containing %q", err, msg)
		}
	}
	if err := ValidateSpec(newCanary("x", "", successRate(1), duration(1), templateMetric("t", "tpl"))); err != nil {
		t.Errorf("valid spec: %v", err)
	}
	bad(func(c *sluicev1.Canary) { c.Spec.Analysis.Metrics = append(c.Spec.Analysis.Metrics, successRate(2)) }, "used twice")
	bad(func(c *sluicev1.Canary) { c.Spec.Analysis.Metrics[0].Name = "error-rate" }, "not a built-in")
	bad(func(c *sluicev1.Canary) { c.Spec.Analysis.Metrics[0].Name = "" }, "no name")
	bad(func(c *sluicev1.Canary) { c.Spec.Analysis.Interval = "1 minute" }, "analysis.interval")
	bad(func(c *sluicev1.Canary) { c.Spec.Mesh = "consul" }, `unknown mesh "consul"`)
	bad(func(c *sluicev1.Canary) { c.Spec.Analysis.Metrics[0].OnNoData = "Pass" }, "onNoData")
	bad(func(c *sluicev1.Canary) { c.Spec.Analysis.Metrics[0].ThresholdRange.Max = ptr(0.5) }, "min 1 > max 0.5")
	bad(func(c *sluicev1.Canary) { c.Spec.Analysis.Metrics[0].ThresholdRange = nil },
		`metric "request-success-rate": no thresholdRange min or max and no compareToPrimary`)
	bad(func(c *sluicev1.Canary) {
		c.Spec.Analysis.Metrics[0].CompareToPrimary = &sluicev1.PrimaryComparison{MaxDelta: -1, Direction: "Up"}
	}, `direction "Up"`)
	bad(func(c *sluicev1.Canary) {
		m := templateMetric("t", "tpl")
		m.MinRequestCount = ptr(int64(5))
		c.Spec.Analysis.Metrics = append(c.Spec.Analysis.Metrics, m)
	}, "minRequestCount applies to built-in metrics only")
}

func TestPromDuration(t *testing.T) {
	for in, want := range map[time.Duration]string{
		time.Minute:                    "1m",
		90 * time.Second:               "1m30s",
		1500 * time.Millisecond:        "1s500ms",
		2 * time.Hour:                  "2h",
		time.Second + time.Microsecond: "1s",
		24*time.Hour + 30*time.Minute:  "1d30m",
	} {
		if got := promDuration(in); got != want {
			t.Errorf("promDuration(%v) = %s, want %s", in, got, want)
		}
	}
}
