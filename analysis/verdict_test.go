package analysis

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/prometheus/common/model"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

func sample(v float64, labels ...string) *model.Sample {
	m := model.Metric{}
	for i := 0; i+1 < len(labels); i += 2 {
		m[model.LabelName(labels[i])] = model.LabelValue(labels[i+1])
	}
	return &model.Sample{Metric: m, Value: model.SampleValue(v)}
}

func TestSampleValue(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    model.Value
		want float64
		err  error
		msg  string
	}{
		{"scalar", &model.Scalar{Value: 1.5}, 1.5, nil, ""},
		{"one sample", model.Vector{sample(99)}, 99, nil, ""},
		{"empty vector", model.Vector{}, 0, ErrNoData, "no series"},
		{"nil", nil, 0, ErrNoData, "empty"},
		{"NaN", model.Vector{sample(math.NaN())}, 0, ErrNoData, "NaN"},
		{"+Inf", model.Vector{sample(math.Inf(1))}, 0, ErrNoData, "+Inf"},
		{"-Inf scalar", &model.Scalar{Value: model.SampleValue(math.Inf(-1))}, 0, ErrNoData, "-Inf"},
		{"two series", model.Vector{sample(1, "a", "1"), sample(2, "a", "2")}, 0, ErrResult, `2 series, want 1 (aggregate them`},
		{"five series", model.Vector{sample(1), sample(2), sample(3), sample(4), sample(5)}, 0, ErrResult, "5 series, want 1"},
		{"matrix", model.Matrix{}, 0, ErrResult, "range vector"},
		{"string", &model.String{Value: "x"}, 0, ErrResult, "string"},
	} {
		got, err := SampleValue(tc.v)
		if !errors.Is(err, tc.err) || got != tc.want || (err != nil && !strings.Contains(err.Error(), tc.msg)) {
			t.Errorf("%s: got %v, %v; want %v, %v containing %q", tc.name, got, err, tc.want, tc.err, tc.msg)
		}
		// The labels of several series may be other tenants': never in a message.
		if err != nil && strings.Contains(err.Error(), `a="`) {
			t.Errorf("%s: the message names series labels: %v", tc.name, err)
		}
	}
	// They go to the debug log, the first three of them.
	if got := seriesList(model.Vector{sample(1, "a", "1"), sample(2, "a", "2")}); got != `{a="1"}, {a="2"}` {
		t.Errorf("seriesList = %s", got)
	}
	if got := seriesList(model.Vector{sample(1), sample(2), sample(3), sample(4), sample(5)}); got != "{}, {}, {}, and 2 more" {
		t.Errorf("seriesList = %s", got)
	}
}

func TestJudgeThreshold(t *testing.T) {
	for _, tc := range []struct {
		value    float64
		min, max *float64
		want     sluicev1.Verdict
		msg      string
	}{
		{95, ptr(90.0), nil, sluicev1.VerdictPass, "95.00 is within [90, +Inf]"},
		{95, ptr(99.0), nil, sluicev1.VerdictFail, "95.00 is below the minimum 99"},
		{99, ptr(99.0), nil, sluicev1.VerdictPass, ""},                                   // inclusive
		{98.99999999999999, ptr(99.0), nil, sluicev1.VerdictPass, ""},                    // rounding, not a failure
		{98.996, ptr(99.0), nil, sluicev1.VerdictFail, "98.996 is below the minimum 99"}, // not "99.00 is below 99"
		{500.001, nil, ptr(500.0), sluicev1.VerdictFail, "500.001 is above the maximum 500"},
		{500, nil, ptr(500.0), sluicev1.VerdictPass, ""},
		{0.5, ptr(0.1), ptr(0.9), sluicev1.VerdictPass, "[0.1, 0.9]"},
		{-3, ptr(-2.5), nil, sluicev1.VerdictFail, "-3.00 is below the minimum -2.5"},
		{7, nil, nil, sluicev1.VerdictPass, "no thresholdRange"},
	} {
		var r *sluicev1.ThresholdRange
		if tc.min != nil || tc.max != nil {
			r = &sluicev1.ThresholdRange{Min: tc.min, Max: tc.max}
		}
		got, msg := judgeThreshold(tc.value, r)
		if got != tc.want || !strings.Contains(msg, tc.msg) {
			t.Errorf("%v in %s: got %s %q, want %s %q", tc.value, FormatRange(r), got, msg, tc.want, tc.msg)
		}
	}
}

func TestJudgeComparison(t *testing.T) {
	for _, tc := range []struct {
		name            string
		canary, primary float64
		cmp             sluicev1.PrimaryComparison
		want            sluicev1.Verdict
	}{
		{sluicev1.MetricRequestSuccessRate, 97, 99, sluicev1.PrimaryComparison{MaxDelta: 1}, sluicev1.VerdictFail},
		{sluicev1.MetricRequestSuccessRate, 97, 99, sluicev1.PrimaryComparison{MaxDelta: 2}, sluicev1.VerdictPass},
		{sluicev1.MetricRequestSuccessRate, 97, 99, sluicev1.PrimaryComparison{MaxDelta: 3}, sluicev1.VerdictPass},
		{sluicev1.MetricRequestSuccessRate, 100, 90, sluicev1.PrimaryComparison{MaxDelta: 0}, sluicev1.VerdictPass},
		{sluicev1.MetricRequestDuration, 120, 100, sluicev1.PrimaryComparison{MaxDelta: 10}, sluicev1.VerdictFail},
		{sluicev1.MetricRequestDuration, 80, 100, sluicev1.PrimaryComparison{MaxDelta: 0}, sluicev1.VerdictPass},
		{"custom-errors", 5, 1, sluicev1.PrimaryComparison{MaxDelta: 1}, sluicev1.VerdictFail},
		{"custom-rate", 5, 1, sluicev1.PrimaryComparison{MaxDelta: 1, Direction: DirectionHigherIsBetter}, sluicev1.VerdictPass},
	} {
		got, msg := judgeComparison(tc.name, tc.canary, tc.primary, &tc.cmp)
		if got != tc.want {
			t.Errorf("%s canary %v primary %v %+v: got %s (%s), want %s", tc.name, tc.canary, tc.primary, tc.cmp, got, msg, tc.want)
		}
	}
}

func TestFormatRange(t *testing.T) {
	for _, tc := range []struct {
		r    *sluicev1.ThresholdRange
		want string
	}{
		{nil, ""},
		{&sluicev1.ThresholdRange{Min: ptr(99.0)}, "[99, +Inf]"},
		{&sluicev1.ThresholdRange{Max: ptr(500.0)}, "[-Inf, 500]"},
		{&sluicev1.ThresholdRange{Min: ptr(0.25), Max: ptr(1e6)}, "[0.25, 1000000]"},
		{&sluicev1.ThresholdRange{}, "[-Inf, +Inf]"},
	} {
		if got := FormatRange(tc.r); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
		if tc.want != "" {
			if _, _, ok := parseRange(tc.want); !ok {
				t.Errorf("parseRange(%q) failed", tc.want)
			}
		}
	}
}

func TestCheckSummary(t *testing.T) {
	c := Check{Results: []sluicev1.MetricResult{
		{Name: "request-success-rate", Verdict: sluicev1.VerdictFail, Value: "80.12", ThresholdRange: "[99, +Inf]", Message: "80.12 is below the minimum 99"},
		{Name: "request-duration", Verdict: sluicev1.VerdictPass, Value: "100.00", ThresholdRange: "[-Inf, 500]"},
		{Name: "cmp", Verdict: sluicev1.VerdictFail, Value: "97.00", PrimaryValue: "99.00", ThresholdRange: "[90, +Inf]", Message: "canary 97.00 is worse than primary 99.00"},
		{Name: "idle", Verdict: sluicev1.VerdictSkipped},
		{Name: "gone", Verdict: sluicev1.VerdictNoData, Message: "no data: query returned no series"},
	}}
	want := "request-success-rate: Fail, value 80.12 outside [99, +Inf] (80.12 is below the minimum 99); " +
		"cmp: Fail, value 97.00 (canary 97.00 is worse than primary 99.00); " +
		"gone: NoData (no data: query returned no series)"
	if got := c.Summary(); got != want {
		t.Errorf("Summary:\n got %s\nwant %s", got, want)
	}
	if !c.Failed() || len(c.Failures()) != 3 {
		t.Errorf("Failed %v, %d failures; want true, 3", c.Failed(), len(c.Failures()))
	}
	if (Check{Results: c.Results[1:2]}).Failed() || (Check{Results: c.Results[3:4]}).Failed() {
		t.Error("Pass and Skipped must not fail a check")
	}
}
