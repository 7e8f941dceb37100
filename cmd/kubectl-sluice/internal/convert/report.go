package convert

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// Severity says what happened to a field of the input.
type Severity string

const (
	// Dropped: the field has no Sluice counterpart and is not in the output; the behaviour it
	// configured is lost. Any dropped field makes convert fail unless drops are accepted.
	Dropped Severity = "dropped"
	// Changed: the field is in the output under another name, value or shape with the same
	// meaning, or Sluice behaves differently in a way the user should know.
	Changed Severity = "changed"
	// Ignored: the field is state, not intent (status, server-set metadata); a new object
	// never carries it.
	Ignored Severity = "ignored"
)

// Finding is one line of the report: what happened to one field of one input object.
type Finding struct {
	Severity Severity
	// Field is the path of the input field, e.g. spec.service.meshName.
	Field string
	// Reason says why, and what to do when action is needed.
	Reason string
}

// ObjectReport is the findings of one input object.
type ObjectReport struct {
	// Object names the input object: Kind namespace/name.
	Object   string
	Findings []Finding
}

func (r *ObjectReport) add(sev Severity, field, format string, args ...any) {
	r.Findings = append(r.Findings, Finding{Severity: sev, Field: field, Reason: fmt.Sprintf(format, args...)})
}

func (r *ObjectReport) drop(field, format string, args ...any) {
	r.add(Dropped, field, format, args...)
}

func (r *ObjectReport) change(field, format string, args ...any) {
	r.add(Changed, field, format, args...)
}

// Count returns the number of findings of severity s.
func (r ObjectReport) Count(s Severity) int {
	n := 0
	for _, f := range r.Findings {
		if f.Severity == s {
			n++
		}
	}
	return n
}

// Report is the findings of a whole conversion.
type Report struct {
	Objects []ObjectReport
	// Converted counts the Sluice objects written; Skipped the input objects not converted.
	Converted, Skipped int
}

// Count returns the number of findings of severity s over every object.
func (r Report) Count(s Severity) int {
	n := 0
	for _, o := range r.Objects {
		n += o.Count(s)
	}
	return n
}

// Write prints the report: one block per object with findings, then a summary line.
func (r Report) Write(w io.Writer) error {
	var b strings.Builder
	for _, o := range r.Objects {
		if len(o.Findings) == 0 {
			continue
		}
		fmt.Fprintf(&b, "%s:\n", o.Object)
		for _, f := range o.Findings {
			fmt.Fprintf(&b, "  %-7s  %s: %s\n", f.Severity, f.Field, f.Reason)
		}
	}
	fmt.Fprintf(&b, "convert: %s written, %s not converted; %s dropped, %d changed, %d ignored\n",
		plural(r.Converted, "Sluice object"), plural(r.Skipped, "input object"), plural(r.Count(Dropped), "field"),
		r.Count(Changed), r.Count(Ignored))
	_, err := io.WriteString(w, b.String())
	return err
}

// residue reports as dropped every field still set in v (a Flagger object or part of it whose
// converted fields were cleared), under prefix: they are fields the converter does not know how
// to carry over.
func residue(r *ObjectReport, prefix string, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		r.drop(prefix, "could not be read: %v", err)
		return
	}
	var m any
	if err := json.Unmarshal(data, &m); err != nil {
		r.drop(prefix, "could not be read: %v", err)
		return
	}
	for _, path := range leaves(prefix, m) {
		r.drop(path, "no Sluice counterpart")
	}
}

// unknownFields returns the paths of input fields the typed value does not hold (fields that are
// not in Flagger's v1beta1 schema), comparing the input as decoded with the typed value encoded.
func unknownFields(input map[string]any, typed any) []string {
	data, err := json.Marshal(typed)
	if err != nil {
		return nil
	}
	var known map[string]any
	if err := json.Unmarshal(data, &known); err != nil {
		return nil
	}
	var out []string
	var walk func(prefix string, in, have any)
	walk = func(prefix string, in, have any) {
		switch in := in.(type) {
		case map[string]any:
			h, _ := have.(map[string]any)
			for _, k := range slices.Sorted(maps.Keys(in)) {
				hv, ok := h[k]
				if !ok {
					out = append(out, join(prefix, k))
					continue
				}
				walk(join(prefix, k), in[k], hv)
			}
		case []any:
			h, _ := have.([]any)
			for i := range in {
				if i < len(h) {
					walk(fmt.Sprintf("%s[%d]", prefix, i), in[i], h[i])
				}
			}
		}
	}
	walk("", input, known)
	return out
}

// leaves lists the paths of the set leaves of a decoded JSON value; empty objects and lists
// count as unset.
func leaves(prefix string, v any) []string {
	switch v := v.(type) {
	case map[string]any:
		var out []string
		for _, k := range slices.Sorted(maps.Keys(v)) {
			out = append(out, leaves(join(prefix, k), v[k])...)
		}
		return out
	case []any:
		var out []string
		for i, x := range v {
			out = append(out, leaves(fmt.Sprintf("%s[%d]", prefix, i), x)...)
		}
		return out
	case nil:
		return nil
	}
	return []string{prefix}
}

func join(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
