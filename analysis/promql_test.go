package analysis

import (
	"errors"
	"strings"
	"testing"
)

func TestValidateTemplateQuery(t *testing.T) {
	for _, tc := range []struct {
		name, query string
		wantErr     string // empty: valid
	}{
		{"valid", `sum(rate(http_requests_total{namespace="{{ .namespace }}",status!~"5.."}[{{ .interval }}]))`, ""},
		{"valid with variables", `sum(rate(x{job="{{ .variables.job }}",pod=~"{{ .target }}-.*"}[{{ .interval }}])) / {{ .variables.scale }}`, ""},
		{"control structure", `sum(rate(x{job="{{ .variables.job }}"}[{{ .interval }}])) / {{ if .variables.scale }}100{{ else }}1{{ end }}`, "if {{if .variables.scale}}"},
		{"unbalanced parenthesis", `sum(rate(http_requests_total[{{ .interval }}])`, "unclosed left parenthesis"},
		{"unknown function", `summ(up)`, "unknown function"},
		{"template syntax", `sum(up{job="{{ .namespace }"})`, "parsing query"},
		{"unknown field", `sum(up{job="{{ .nosuch }}"})`, "the action {{.nosuch}} is not allowed"},
		{"unknown variable", `sum(up{job="{{ .variables.nosuch }}"})`, ""}, // each Canary must set it
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateTemplateQuery(tc.query)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("valid query rejected: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrTemplate) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("got %v, want ErrTemplate mentioning %q", err, tc.wantErr)
			}
		})
	}
}
