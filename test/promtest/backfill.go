package promtest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Sample is one value at one time.
type Sample struct {
	T time.Time
	V float64
}

// Series is one time series to backfill: a metric name (written untyped, so any name such as
// foo_total or foo_bucket is accepted), its labels and its samples.
type Series struct {
	Name    string
	Labels  map[string]string
	Samples []Sample
}

// Counter returns a counter that is 0 at from and grows by perSecond every second, with one sample
// every step from from to to inclusive. rate() over it gives perSecond.
func Counter(name string, labels map[string]string, from, to time.Time, step time.Duration, perSecond float64) Series {
	s := Series{Name: name, Labels: labels}
	for t := from; !t.After(to); t = t.Add(step) {
		s.Samples = append(s.Samples, Sample{T: t, V: perSecond * t.Sub(from).Seconds()})
	}
	return s
}

// Gauge returns a series with value v every step from from to to inclusive.
func Gauge(name string, labels map[string]string, from, to time.Time, step time.Duration, v float64) Series {
	s := Series{Name: name, Labels: labels}
	for t := from; !t.After(to); t = t.Add(step) {
		s.Samples = append(s.Samples, Sample{T: t, V: v})
	}
	return s
}

// Histogram returns the cumulative buckets of a classic histogram name+"_bucket": for each upper
// bound le (math.Inf(1) for +Inf) a Counter growing by perSecond[le] observations per second, plus
// the given labels and le. perSecond must be cumulative (non-decreasing in le) like real buckets.
func Histogram(name string, labels map[string]string, from, to time.Time, step time.Duration, perSecond map[float64]float64) []Series {
	les := make([]float64, 0, len(perSecond))
	for le := range perSecond {
		les = append(les, le)
	}
	sort.Float64s(les)
	out := make([]Series, 0, len(les))
	for _, le := range les {
		l := make(map[string]string, len(labels)+1)
		for k, v := range labels {
			l[k] = v
		}
		l["le"] = formatValue(le)
		out = append(out, Counter(name+"_bucket", l, from, to, step, perSecond[le]))
	}
	return out
}

var (
	metricNameRE = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelNameRE  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
)

// WriteOpenMetrics writes series as one OpenMetrics document ending in "# EOF": series of the same
// name are grouped (OpenMetrics wants a metric family in one piece) in order of first appearance,
// samples sorted by time, label values escaped. errors: an invalid metric or label name, write
// errors.
func WriteOpenMetrics(w io.Writer, series []Series) error {
	var names []string
	byName := map[string][]Series{}
	for _, s := range series {
		if !metricNameRE.MatchString(s.Name) {
			return fmt.Errorf("invalid metric name %q", s.Name)
		}
		if _, ok := byName[s.Name]; !ok {
			names = append(names, s.Name)
		}
		byName[s.Name] = append(byName[s.Name], s)
	}
	bw := bufio.NewWriter(w)
	for _, name := range names {
		for _, s := range byName[name] {
			labels, err := formatLabels(s.Labels)
			if err != nil {
				return fmt.Errorf("series %s: %w", name, err)
			}
			samples := slices.Clone(s.Samples)
			slices.SortStableFunc(samples, func(a, b Sample) int { return a.T.Compare(b.T) })
			for _, smp := range samples {
				ts := strconv.FormatFloat(float64(smp.T.UnixMilli())/1000, 'f', -1, 64)
				fmt.Fprintf(bw, "%s%s %s %s\n", name, labels, formatValue(smp.V), ts)
			}
		}
	}
	bw.WriteString("# EOF\n")
	return bw.Flush()
}

// formatLabels renders {a="1",b="2"} with sorted names; empty for no labels.
func formatLabels(labels map[string]string) (string, error) {
	if len(labels) == 0 {
		return "", nil
	}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		if !labelNameRE.MatchString(k) {
			return "", fmt.Errorf("invalid label name %q", k)
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteByte('{')
	esc := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `%s="%s"`, k, esc.Replace(labels[k]))
	}
	b.WriteByte('}')
	return b.String(), nil
}

// formatValue renders a sample value or le bound: NaN, +Inf, -Inf or the shortest decimal.
func formatValue(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// Backfill turns one OpenMetrics document into TSDB blocks in dataDir with
// `promtool tsdb create-blocks-from openmetrics`, using a temporary file in dir.
// errors: ErrNotInstalled, promtool's failure with its output.
func Backfill(ctx context.Context, promtool, openMetrics, dir, dataDir string) error {
	bin, err := exec.LookPath(promtool)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNotInstalled, err)
	}
	f, err := os.CreateTemp(dir, "backfill-*.om")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.WriteString(openMetrics); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	out, err := exec.CommandContext(ctx, bin, "tsdb", "create-blocks-from", "openmetrics", "--quiet", f.Name(), dataDir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("promtool tsdb create-blocks-from openmetrics %s: %w\n%s", filepath.Base(f.Name()), err, out)
	}
	return nil
}

// backfill writes cfg's series and documents into dataDir.
func backfill(ctx context.Context, cfg Config, dir, dataDir string) error {
	docs := slices.Clone(cfg.OpenMetrics)
	if len(cfg.Series) > 0 {
		var b strings.Builder
		if err := WriteOpenMetrics(&b, cfg.Series); err != nil {
			return err
		}
		docs = append(docs, b.String())
	}
	for _, doc := range docs {
		if err := Backfill(ctx, cfg.Promtool, doc, dir, dataDir); err != nil {
			return err
		}
	}
	return nil
}
