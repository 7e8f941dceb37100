// Package golden compares test output with golden files under testdata/: whole rollouts and
// waves logged as runbook-like lines. Run the tests with -update to rewrite the files, then read
// the diff before committing it.
package golden

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// update is the -update flag of every test binary that imports this package.
var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// Assert compares lines (joined with newlines) with testdata/<name>.golden, or rewrites the file
// under -update.
func Assert(t testing.TB, name string, lines []string) {
	t.Helper()
	got := strings.Join(lines, "\n") + "\n"
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file (run the test with -update to create it): %v", err)
	}
	if got != string(want) {
		t.Fatalf("output differs from %s (check it, then rerun with -update):\n--- got\n%s--- want\n%s", path, got, want)
	}
}
