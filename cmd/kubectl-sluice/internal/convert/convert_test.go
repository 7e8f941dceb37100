package convert_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sluice.dev/sluice/cmd/kubectl-sluice/internal/convert"
	"sluice.dev/sluice/test/golden"
)

// corpus lists the Flagger manifests under testdata/flagger.
func corpus(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "flagger", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	return files
}

// TestConvertCorpusGolden converts every corpus file and compares the output and the report with
// testdata/<file>.golden.
func TestConvertCorpusGolden(t *testing.T) {
	for _, f := range corpus(t) {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		t.Run(name, func(t *testing.T) {
			in, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			res, err := convert.Convert(bytes.NewReader(in))
			if err != nil {
				t.Fatal(err)
			}
			var out, report bytes.Buffer
			if err := convert.WriteYAML(&out, res.Objects); err != nil {
				t.Fatal(err)
			}
			if err := res.Report.Write(&report); err != nil {
				t.Fatal(err)
			}
			golden.Assert(t, name, []string{strings.TrimSuffix(out.String(), "\n"), "# report", strings.TrimSuffix(report.String(), "\n")})
		})
	}
}
