package analysis

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"
)

// hostileTemplates make an unrestricted text/template allocate ~640 MB or spin forever.
var hostileTemplates = []string{
	`{{range 64}}{{printf "%010000000d" 0}}{{end}}`,
	`{{range 1000000000000}}{{end}}`,
}

// templateCases are queries a MetricTemplate may have (allowed) or not, shared by the tests of
// the tree check and of the admission rule (api/v1alpha1 tests the same rule on a real
// apiserver).
var templateCases = []struct {
	query   string
	allowed bool
}{
	{`sum(rate(x{namespace="{{ .namespace }}"}[{{ .interval }}]))`, true},
	{`x{a="{{.name}}",b="{{- .target -}}",c="{{ .service }}",d="{{ .variables.path_1 }}"}`, true},
	{"x{a=\"{{\n\t.name\n}}\"}", true},
	{`{{/* a comment, even with {{ range }} in it */}}vector(1)`, true},
	{`{{- /* trimmed */ -}} vector(1)`, true},
	{`x{a="{"} or y{b="}}"} or z{c="{ {"}`, true},
	{`vector(1)`, true},
	{hostileTemplates[0], false},
	{hostileTemplates[1], false},
	{`{{ printf "%s" .name }}`, false},
	{`{{ .name | printf "%s" }}`, false},
	{`{{ if .name }}x{{ end }}`, false},
	{`{{ with .name }}{{ . }}{{ end }}`, false},
	{`{{ define "x" }}y{{ end }}{{ template "x" }}`, false},
	{`{{ block "x" . }}y{{ end }}`, false},
	{`{{ $x := .name }}{{ $x }}`, false},
	{`{{ len .variables }}`, false},
	{`{{ index .variables "a" }}`, false},
	{`{{ .variables }}`, false},
	{`{{ .name.foo }}`, false},
	{`{{ . }}`, false},
	{`{{ .nope }}`, false},
	{`{{ "{{ .name }}" }}`, false},
	{`{{{ .name }}`, false},
	{`{{/* c */}}{{ len .name }}`, false},
	{`{{ .name }}{{ 1 }}`, false},
	{strings.Repeat("x", MaxQueryLength+1), false},
}

// TestOnlyFieldActionsRender: a template may only print {{ .name }}, {{ .namespace }},
// {{ .target }}, {{ .service }}, {{ .interval }} and {{ .variables.KEY }}; anything else is
// refused (ErrTemplate) before anything is rendered, naming the action and its position.
func TestOnlyFieldActionsRender(t *testing.T) {
	vars := TemplateVars{Name: "web", Namespace: "shop", Target: "web", Service: "web", Interval: "1m",
		Variables: map[string]string{"path_1": "/", "a": "b"}}
	for _, tc := range templateCases {
		_, err := parseTemplate(tc.query)
		if tc.allowed != (err == nil) {
			t.Errorf("%.60q: allowed %v, err %v", tc.query, tc.allowed, err)
		}
		if tc.allowed {
			if _, err := RenderQuery(tc.query, vars); err != nil {
				t.Errorf("%.60q: %v", tc.query, err)
			}
			continue
		}
		if _, err := RenderQuery(tc.query, vars); !errors.Is(err, ErrTemplate) {
			t.Errorf("%.60q rendered: %v, want ErrTemplate", tc.query, err)
		}
	}
	_, err := parseTemplate(`sum(x{a="{{ .name }}"}) + {{range 3}}1{{end}}`)
	if err == nil || !strings.Contains(err.Error(), "query:1:34: range {{range 3}}1{{end}} is not allowed") {
		t.Errorf("refusal does not name the action and its position: %v", err)
	}
}

// TestHostileTemplatesCostNothing: the templates that would render ~640 MB or spin forever are
// refused by validation and by rendering within milliseconds and without allocating more than a
// few kilobytes.
func TestHostileTemplatesCostNothing(t *testing.T) {
	for _, q := range hostileTemplates {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		start := time.Now()
		errValidate := ValidateTemplateQuery(q)
		_, errRender := RenderQuery(q, TemplateVars{Name: "a", Namespace: "b", Interval: "1m"})
		took := time.Since(start)
		runtime.ReadMemStats(&after)
		if !errors.Is(errValidate, ErrTemplate) || !errors.Is(errRender, ErrTemplate) {
			t.Errorf("%s: validate %v, render %v; want ErrTemplate", q, errValidate, errRender)
		}
		if took > 100*time.Millisecond {
			t.Errorf("%s: refused after %s", q, took)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 256<<10 {
			t.Errorf("%s: %d bytes allocated", q, alloc)
		}
	}
}

// TestRenderingIsBounded: a template printing long templateVariables many times stops at
// MaxRenderedQueryLength with ErrTemplate instead of growing without bound.
func TestRenderingIsBounded(t *testing.T) {
	q := strings.Repeat(`{{ .variables.v }}`, 200)
	long := strings.Repeat("x", 1<<20)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := RenderQuery(q, TemplateVars{Variables: map[string]string{"v": long}})
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrTemplate) || !strings.Contains(err.Error(), "longer than 16384 bytes") {
		t.Fatalf("err = %v, want ErrTemplate naming the limit", err)
	}
	// The escaped copy of the 1 MiB value, not 200 of them.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
		t.Errorf("%d bytes allocated rendering", alloc)
	}
	if got, err := RenderQuery(q, TemplateVars{Variables: map[string]string{"v": "ab"}}); err != nil || len(got) != 400 {
		t.Errorf("short values: %d bytes, %v", len(got), err)
	}
}

// admissionRule is the regular expression of the CRD's CEL rule on MetricTemplate spec.query.
func admissionRule(t testing.TB) *regexp.Regexp {
	t.Helper()
	crd, err := os.ReadFile(filepath.Join("..", "config", "crd", "sluice.dev_metrictemplates.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`rule: self\.matches\('([^']*)'\)`).FindSubmatch(crd)
	if m == nil {
		t.Fatal("no matches() rule on the query in the MetricTemplate CRD")
	}
	return regexp.MustCompile(string(m[1]))
}

// FuzzAdmissionRuleAgreesWithTreeCheck: whatever the CRD's CEL rule admits (the same RE2
// expression CEL runs), the check before rendering never finds an action it refuses: at most a
// syntax error, which is harmless. Run as a test, it checks the seed corpus (templateCases and
// near misses); `go test -fuzz` explores further.
func FuzzAdmissionRuleAgreesWithTreeCheck(f *testing.F) {
	rule := admissionRule(f)
	for _, tc := range templateCases {
		if len(tc.query) <= MaxQueryLength {
			f.Add(tc.query)
		}
	}
	for _, s := range []string{`{{ .name}}}}`, `{{- .name}}`, `{{-.name}}`, `{{ .name -}}`, `{{ .name-}}`,
		`{{/* x */ -}}`, `{{/* x */-}}`, `{{-  /* x */}}`, `{{/**/}}`, `{{/* a */}}{{/* b */}}`, `{{ .variables.a.b }}`,
		`{ {{ .name }}`, `{{ .name }}{`, `{{ .interval }}{{`, "{{ .name\v}}", `{{ /* x */ }}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		if len(q) > MaxQueryLength || !rule.MatchString(q) {
			return
		}
		if _, err := parseTemplate(q); err != nil && !strings.Contains(err.Error(), "parsing query") {
			t.Errorf("admitted at admission but refused before rendering: %q: %v", q, err)
		}
	})
}

// TestAdmissionRuleRefusesWhatTheTreeCheckRefuses: the CEL rule's expression (as CEL runs it)
// admits exactly the allowed templateCases.
func TestAdmissionRuleRefusesWhatTheTreeCheckRefuses(t *testing.T) {
	rule := admissionRule(t)
	for _, tc := range templateCases {
		if got := rule.MatchString(tc.query) && len(tc.query) <= MaxQueryLength; got != tc.allowed {
			t.Errorf("%.60q: admitted %v, want %v", tc.query, got, tc.allowed)
		}
	}
}
