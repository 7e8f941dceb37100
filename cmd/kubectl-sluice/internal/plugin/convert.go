package plugin

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"sluice.dev/sluice/cmd/kubectl-sluice/internal/convert"
)

// ExitDropped is the exit status of convert when it dropped fields and --allow-drops was not
// given; other errors exit with 1.
const ExitDropped = 2

// ExitError is an error that asks for a specific exit status.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// newConvertCommand returns `convert -f FILE|DIR|-`.
func newConvertCommand(o Options) *cobra.Command {
	var file string
	var allowDrops bool
	cmd := &cobra.Command{
		Use:   "convert -f FILE|DIR|-",
		Short: "Convert Flagger Canaries, MetricTemplates and AlertProviders into Sluice objects",
		Long: `convert reads flagger.app/v1beta1 Canary, MetricTemplate and AlertProvider manifests (YAML
documents, JSON, or a List as "kubectl get -o yaml" prints) and writes the Sluice equivalents to
stdout. The report on stderr names every field it dropped or changed, and why. Other objects are
left out of the output.

Exit status: 0 when nothing was dropped (or --allow-drops is given), 2 when fields were dropped,
1 on unreadable input.`,
		Example: `  kubectl get canaries.flagger.app -n test -o yaml | kubectl sluice convert -f - > sluice.yaml
  kubectl sluice convert -f flagger/ --allow-drops`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			in, closeIn, err := openInput(file, cmd.InOrStdin())
			if err != nil {
				return err
			}
			defer closeIn()
			res, err := convert.Convert(in)
			if err != nil {
				return fmt.Errorf("reading %s: %w", file, err)
			}
			if err := convert.WriteYAML(o.Out, res.Objects); err != nil {
				return err
			}
			if err := res.Report.Write(o.ErrOut); err != nil {
				return err
			}
			if n := res.Report.Count(convert.Dropped); n > 0 && !allowDrops {
				return &ExitError{Code: ExitDropped, Err: fmt.Errorf("%d fields were dropped (listed above): review them, then rerun with --allow-drops to accept", n)}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "filename", "f", "", "File or directory (its .yaml, .yml and .json files) to convert, or - for stdin.")
	cmd.Flags().BoolVar(&allowDrops, "allow-drops", false, "Exit 0 even when fields were dropped.")
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}

// openInput opens FILE, every .yaml, .yml and .json file of a directory (not its
// subdirectories, in name order, as kubectl apply -f DIR reads them) as one multi-document
// stream, or stdin for "-".
func openInput(file string, stdin io.Reader) (io.Reader, func(), error) {
	if file == "-" {
		return stdin, func() {}, nil
	}
	info, err := os.Stat(file)
	if err != nil {
		return nil, nil, err
	}
	if info.IsDir() {
		return readDir(file)
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, nil, err
	}
	return f, func() { _ = f.Close() }, nil
}

// readDir joins the manifest files of dir into one YAML stream. errors: unreadable files, a
// directory without manifests.
func readDir(dir string) (io.Reader, func(), error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	var buf bytes.Buffer
	n := 0
	for _, e := range entries { // os.ReadDir sorts by name
		switch filepath.Ext(e.Name()) {
		case ".yaml", ".yml", ".json":
		default:
			continue
		}
		if e.IsDir() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, nil, err
		}
		buf.WriteString("\n---\n")
		buf.Write(data)
		n++
	}
	if n == 0 {
		return nil, nil, fmt.Errorf("%s has no .yaml, .yml or .json files", dir)
	}
	return &buf, func() {}, nil
}
