package analysis

import (
	"fmt"
	"strconv"
	"strings"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// Check is the outcome of one analysis of a Canary: one result per metric, in spec order.
type Check struct {
	Results []sluicev1.MetricResult
}

// Failed reports whether the check counts as a failed check: any metric whose verdict is Fail,
// NoData (metrics that skip no data report Skipped instead) or Error.
func (c Check) Failed() bool {
	return len(c.Failures()) > 0
}

// Failures returns the results that make the check fail, in spec order.
func (c Check) Failures() []sluicev1.MetricResult {
	var out []sluicev1.MetricResult
	for _, r := range c.Results {
		switch r.Verdict {
		case sluicev1.VerdictFail, sluicev1.VerdictNoData, sluicev1.VerdictError:
			out = append(out, r)
		}
	}
	return out
}

// Summary describes the failures in one line, e.g.
// "request-success-rate: Fail, value 80.12 outside [99, +Inf] (80.12 is below the minimum 99)";
// empty when the check passed. "outside RANGE" appears only when the value lies outside the
// threshold range (a metric within its range can still fail the primary comparison).
func (c Check) Summary() string {
	var parts []string
	for _, r := range c.Failures() {
		s := fmt.Sprintf("%s: %s", r.Name, r.Verdict)
		if r.Value != "" {
			s += ", value " + r.Value
		}
		if r.Verdict == sluicev1.VerdictFail && outside(r.Value, r.ThresholdRange) {
			s += " outside " + r.ThresholdRange
		}
		if r.Message != "" {
			s += " (" + r.Message + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

// outside reports whether the formatted value lies outside the formatted range; false when
// either does not parse.
func outside(value, rangeText string) bool {
	v, err := strconv.ParseFloat(value, 64)
	if err != nil {
		return false
	}
	lo, hi, ok := parseRange(rangeText)
	return ok && (v < lo || v > hi)
}
