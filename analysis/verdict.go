package analysis

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/prometheus/common/model"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// Directions of a PrimaryComparison (spec.analysis.metrics[].compareToPrimary.direction).
const (
	// DirectionHigherIsBetter: the canary fails when it is lower than the primary by more than
	// maxDelta (success rates). Default for request-success-rate.
	DirectionHigherIsBetter = "HigherIsBetter"
	// DirectionLowerIsBetter: the canary fails when it is higher than the primary by more than
	// maxDelta (latencies, error rates). Default for every other metric.
	DirectionLowerIsBetter = "LowerIsBetter"
)

// SampleValue extracts the one number of an instant-query result: a scalar or a vector of exactly
// one sample. Returns the value; errors: ErrNoData for an empty vector, NaN, +Inf or -Inf (the
// message says which); ErrResult for several series (naming the count, never their labels), a
// range vector or a string.
func SampleValue(v model.Value) (float64, error) {
	var f float64
	switch r := v.(type) {
	case nil:
		return 0, fmt.Errorf("%w: empty response", ErrNoData)
	case *model.Scalar:
		f = float64(r.Value)
	case model.Vector:
		switch len(r) {
		case 0:
			return 0, fmt.Errorf("%w: query returned no series", ErrNoData)
		case 1:
			f = float64(r[0].Value)
		default:
			// Never their labels: they may name other tenants' objects (the debug log has them).
			return 0, fmt.Errorf("%w: query returned %d series, want 1 (aggregate them, e.g. with sum())", ErrResult, len(r))
		}
	case model.Matrix:
		return 0, fmt.Errorf("%w: query returned a range vector of %d series, want an instant vector or scalar", ErrResult, len(r))
	default:
		return 0, fmt.Errorf("%w: query returned a %s, want an instant vector or scalar", ErrResult, v.Type())
	}
	switch {
	case math.IsNaN(f):
		return 0, fmt.Errorf("%w: query returned NaN", ErrNoData)
	case math.IsInf(f, 1):
		return 0, fmt.Errorf("%w: query returned +Inf", ErrNoData)
	case math.IsInf(f, -1):
		return 0, fmt.Errorf("%w: query returned -Inf", ErrNoData)
	}
	return f, nil
}

// seriesList names the first series of v, e.g. `{code="200"}, {code="500"}`, for the debug log.
func seriesList(v model.Vector) string {
	const shown = 3
	parts := make([]string, 0, shown+1)
	for i, s := range v {
		if i == shown {
			parts = append(parts, fmt.Sprintf("and %d more", len(v)-shown))
			break
		}
		parts = append(parts, s.Metric.String())
	}
	return strings.Join(parts, ", ")
}

// tolerance absorbs floating-point rounding in comparisons with user bounds: 99 requests of 100
// may compute as 98.99999999999999 %.
func tolerance(bound float64) float64 {
	return 1e-9 * math.Max(1, math.Abs(bound))
}

// judgeThreshold compares value with the inclusive range r (nil: no bound). Returns Pass or Fail
// and a message.
func judgeThreshold(value float64, r *sluicev1.ThresholdRange) (sluicev1.Verdict, string) {
	if r == nil || (r.Min == nil && r.Max == nil) {
		return sluicev1.VerdictPass, fmt.Sprintf("value %s recorded; no thresholdRange", FormatValue(value))
	}
	if r.Min != nil && value < *r.Min-tolerance(*r.Min) {
		return sluicev1.VerdictFail, fmt.Sprintf("%s is below the minimum %s", formatNear(value, *r.Min), formatBound(*r.Min))
	}
	if r.Max != nil && value > *r.Max+tolerance(*r.Max) {
		return sluicev1.VerdictFail, fmt.Sprintf("%s is above the maximum %s", formatNear(value, *r.Max), formatBound(*r.Max))
	}
	return sluicev1.VerdictPass, fmt.Sprintf("%s is within %s", FormatValue(value), FormatRange(r))
}

// comparisonDirection returns c.Direction, or the default for metric name.
func comparisonDirection(name string, c *sluicev1.PrimaryComparison) string {
	if c.Direction != "" {
		return c.Direction
	}
	if name == sluicev1.MetricRequestSuccessRate {
		return DirectionHigherIsBetter
	}
	return DirectionLowerIsBetter
}

// judgeComparison fails when canary is worse than primary by more than c.MaxDelta in the metric's
// direction. Returns Pass or Fail and a message.
func judgeComparison(name string, canary, primary float64, c *sluicev1.PrimaryComparison) (sluicev1.Verdict, string) {
	dir := comparisonDirection(name, c)
	worse := canary - primary
	if dir == DirectionHigherIsBetter {
		worse = primary - canary
	}
	if worse > c.MaxDelta+tolerance(c.MaxDelta) {
		return sluicev1.VerdictFail, fmt.Sprintf("canary %s is worse than primary %s by %s, more than maxDelta %s (%s)",
			FormatValue(canary), FormatValue(primary), FormatValue(worse), formatBound(c.MaxDelta), dir)
	}
	return sluicev1.VerdictPass, fmt.Sprintf("canary %s is within maxDelta %s of primary %s (%s)",
		FormatValue(canary), formatBound(c.MaxDelta), FormatValue(primary), dir)
}

// FormatValue formats a measured value with two decimals, e.g. "95.00".
func FormatValue(v float64) string {
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// formatNear formats v with two decimals, or with every digit when two decimals would round it
// onto bound (98.996 against a minimum of 99 reads "98.996", not "99.00").
func formatNear(v, bound float64) string {
	s := FormatValue(v)
	if r, err := strconv.ParseFloat(s, 64); err == nil && (r < bound) == (v < bound) && r != bound {
		return s
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// formatBound formats a user-given bound as written, e.g. "99" or "0.5".
func formatBound(v float64) string {
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// FormatRange formats r as an inclusive interval, e.g. "[99, +Inf]" or "[-Inf, 500]"; empty for
// nil.
func FormatRange(r *sluicev1.ThresholdRange) string {
	if r == nil {
		return ""
	}
	lo, hi := "-Inf", "+Inf"
	if r.Min != nil {
		lo = formatBound(*r.Min)
	}
	if r.Max != nil {
		hi = formatBound(*r.Max)
	}
	return "[" + lo + ", " + hi + "]"
}

// parseRange is the inverse of FormatRange. ok is false for text FormatRange does not produce.
func parseRange(s string) (lo, hi float64, ok bool) {
	inner, found := strings.CutPrefix(s, "[")
	if !found {
		return 0, 0, false
	}
	inner, found = strings.CutSuffix(inner, "]")
	if !found {
		return 0, 0, false
	}
	a, b, found := strings.Cut(inner, ", ")
	if !found {
		return 0, 0, false
	}
	lo, errLo := strconv.ParseFloat(a, 64)
	hi, errHi := strconv.ParseFloat(b, 64)
	return lo, hi, errLo == nil && errHi == nil
}
