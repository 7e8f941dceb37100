package convert

import (
	"strings"
	"testing"

	"k8s.io/utils/ptr"
)

// TestWebhookCallTimeBounded: a Flagger webhook whose timeout or retries exceed Sluice's bounds on
// a call's time (an attempt at most 5m, timeout × (1 + retries) at most 10m) is brought within
// them, and the report says so; one within them is kept as it is.
func TestWebhookCallTimeBounded(t *testing.T) {
	tests := []struct {
		timeout     string
		retries     float64
		wantTimeout string
		wantRetries int32
		report      string
	}{
		{timeout: "30s", retries: 3, wantTimeout: "30s", wantRetries: 3},
		{timeout: "5m", retries: 1, wantTimeout: "5m", wantRetries: 1},
		{timeout: "15m", wantTimeout: "5m", report: "timeout: 15m → 5m"},
		{timeout: "2m", retries: 10, wantTimeout: "2m", wantRetries: 4, report: "retries: 10 → 4"},
		{timeout: "1h", retries: 2, wantTimeout: "5m", wantRetries: 1, report: "timeout: 1h → 5m"},
	}
	for _, tt := range tests {
		r := &ObjectReport{}
		in := &fWebhook{Name: ptr.To("gate"), URL: ptr.To("http://gate/"), Timeout: ptr.To(tt.timeout), Retries: ptr.To(tt.retries)}
		w := convertWebhook(in, "spec.analysis.webhooks[0]", r)
		var findings []string
		for _, f := range r.Findings {
			findings = append(findings, f.Field+": "+f.Reason)
		}
		if w.Timeout != tt.wantTimeout || w.Retries != tt.wantRetries || !strings.Contains(strings.Join(findings, "\n"), tt.report) ||
			(tt.report == "" && len(findings) > 0) {
			t.Errorf("timeout %s retries %v: got %s and %d retries, report %q; want %s and %d, a report naming %q",
				tt.timeout, tt.retries, w.Timeout, w.Retries, findings, tt.wantTimeout, tt.wantRetries, tt.report)
		}
	}
}
