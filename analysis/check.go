package analysis

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// Check is the outcome of one analysis of a Canary: one result per metric, in spec order.
type Check struct {
	Results []sluicev1.MetricResult
}

// Outcome applies the evidence rule to the check's verdicts:
//
//   - Failed when any metric is Fail or NoData (metrics that skip no data report Skipped);
//   - else Error when any metric could not be judged (Error: metrics server unreachable, query
//     rejected, partial results) — not evidence against the canary, and no evidence for it;
//   - else Passed when at least one metric is Pass;
//   - else NoEvidence (every metric Skipped, or no metrics): nothing says the canary is good.
func (c Check) Outcome() sluicev1.CheckOutcome {
	var pass, errored bool
	for _, r := range c.Results {
		switch r.Verdict {
		case sluicev1.VerdictFail, sluicev1.VerdictNoData:
			return sluicev1.CheckFailed
		case sluicev1.VerdictError:
			errored = true
		case sluicev1.VerdictPass:
			pass = true
		}
	}
	switch {
	case errored:
		return sluicev1.CheckError
	case pass:
		return sluicev1.CheckPassed
	}
	return sluicev1.CheckNoEvidence
}

// Failed reports whether the check counts as a failed check: any metric whose verdict is Fail or
// NoData (metrics that skip no data report Skipped instead). Error verdicts are not failures:
// see Outcome.
func (c Check) Failed() bool {
	return c.Outcome() == sluicev1.CheckFailed
}

// Failures returns the results that make the check fail, in spec order.
func (c Check) Failures() []sluicev1.MetricResult {
	return c.having(sluicev1.VerdictFail, sluicev1.VerdictNoData)
}

// Errors returns the results that could not be judged, in spec order.
func (c Check) Errors() []sluicev1.MetricResult {
	return c.having(sluicev1.VerdictError)
}

func (c Check) having(verdicts ...sluicev1.Verdict) []sluicev1.MetricResult {
	var out []sluicev1.MetricResult
	for _, r := range c.Results {
		for _, v := range verdicts {
			if r.Verdict == v {
				out = append(out, r)
			}
		}
	}
	return out
}

// WindowStart returns the earliest start of the metric windows of the check; zero without one.
func (c Check) WindowStart() time.Time {
	var start time.Time
	for _, r := range c.Results {
		if r.WindowStart != nil && (start.IsZero() || r.WindowStart.Time.Before(start)) {
			start = r.WindowStart.Time
		}
	}
	return start
}

// Summary describes what decided the outcome in one line: the failures, else the errors, else
// (no evidence) why every metric was skipped; empty when the check passed. A failure reads e.g.
// "request-success-rate: Fail, value 80.12 outside [99, +Inf] (80.12 is below the minimum 99)";
// "outside RANGE" appears only when the value lies outside the threshold range (a metric within
// its range can still fail the primary comparison).
func (c Check) Summary() string {
	var shown []sluicev1.MetricResult
	switch c.Outcome() {
	case sluicev1.CheckFailed:
		shown = c.Failures()
	case sluicev1.CheckError:
		shown = c.Errors()
	case sluicev1.CheckNoEvidence:
		if len(c.Results) == 0 {
			return "no metrics to judge"
		}
		shown = c.Results
	default:
		return ""
	}
	parts := make([]string, 0, len(shown))
	for _, r := range shown {
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
