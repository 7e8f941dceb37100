package analysis

import (
	"fmt"
	"regexp"
	"strings"
)

// EscapeString escapes s for use inside a PromQL double-quoted string literal, such as a label
// value in `{workload="..."}`: backslash and double quote get a backslash, newline, carriage return
// and tab become \n, \r and \t, and other control characters become \xNN. The result can never end
// the literal early, so a value like `a"} or vector(1) #` stays one label value and matches
// nothing instead of changing the query. It does not make s safe outside double quotes (in a range
// `[...]`, a single-quoted or a backtick string).
func EscapeString(s string) string {
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for _, r := range s {
		switch r {
		case '\\':
			b.WriteString(`\\`)
		case '"':
			b.WriteString(`\"`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if r < 0x20 || r == 0x7f {
				fmt.Fprintf(&b, `\x%02x`, r)
				continue
			}
			b.WriteRune(r)
		}
	}
	return b.String()
}

// EscapeRegexp quotes s as a literal for a PromQL regular-expression matcher (=~, !~) and escapes
// the result for a double-quoted string literal: EscapeString(regexp.QuoteMeta(s)).
func EscapeRegexp(s string) string {
	return EscapeString(regexp.QuoteMeta(s))
}

func needsEscape(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '\\' || c == '"' || c < 0x20 || c == 0x7f {
			return true
		}
	}
	return false
}
