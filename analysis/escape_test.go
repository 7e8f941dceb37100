package analysis

import "testing"

func TestEscapeString(t *testing.T) {
	for in, want := range map[string]string{
		"":                   "",
		"plain-name_1.x":     "plain-name_1.x",
		`a"b`:                `a\"b`,
		`a\b`:                `a\\b`,
		`\"`:                 `\\\"`,
		"a\nb\rc\td":         `a\nb\rc\td`,
		"nul\x00del\x7f":     `nul\x00del\x7f`,
		`a"} or vector(1) #`: `a\"} or vector(1) #`,
		"ünï☃de":             "ünï☃de",
		"'single' `tick`":    "'single' `tick`",
	} {
		if got := EscapeString(in); got != want {
			t.Errorf("EscapeString(%q) = %s, want %s", in, got, want)
		}
	}
	if got, want := EscapeRegexp(`web.v1+"x"`), `web\\.v1\\+\"x\"`; got != want {
		t.Errorf("EscapeRegexp = %s, want %s", got, want)
	}
}
