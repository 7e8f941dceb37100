package analysis

import "strings"

// withoutLabelSets replaces every label set in s, such as {pod="a",namespace="b"}, with {…}: a
// message Prometheus wrote about the series a query touched (a duplicate-series execution error, a
// warning) keeps its shape but names no series, whose labels may be other tenants' (Secret names,
// images, paths). Braces inside a label value's quotes do not end the set; an opening brace
// without a closing one is kept as it is.
func withoutLabelSets(s string) string {
	if !strings.Contains(s, "{") {
		return s
	}
	var b strings.Builder
	for {
		open := strings.IndexByte(s, '{')
		if open < 0 {
			b.WriteString(s)
			return b.String()
		}
		end := closingBrace(s[open:])
		if end < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:open])
		b.WriteString("{…}")
		s = s[open+end+1:]
	}
}

// closingBrace returns the index of the brace closing the label set s begins with, skipping
// quoted strings (with backslash escapes); -1 when there is none.
func closingBrace(s string) int {
	var quote byte
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0 && c == '\\':
			i++
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
		case c == '"' || c == '\'' || c == '`':
			quote = c
		case c == '}':
			return i
		}
	}
	return -1
}
