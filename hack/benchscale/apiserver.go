package main

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"sluice.dev/sluice/test/managerproc"
)

// apiserverScraper reads the kube-apiserver's own /metrics: how many requests it served, from
// every client (kube-controller-manager, the scheduler, kwok, the benchmark and the manager), so a
// phase's load on the shared apiserver can be set against the manager's part of it.
type apiserverScraper struct{ rest rest.Interface }

func newAPIServerScraper(cfg *rest.Config) (*apiserverScraper, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &apiserverScraper{rest: cs.Discovery().RESTClient()}, nil
}

// requests is the apiserver's count of served requests other than watches (a watch is one
// long request, whatever it delivers), by verb, resource and subresource (apiserver_request_total).
func (a *apiserverScraper) requests(ctx context.Context) (map[string]float64, error) {
	body, err := a.rest.Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the apiserver's /metrics: %w", err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		return nil, fmt.Errorf("parsing the apiserver's /metrics: %w", err)
	}
	out := map[string]float64{}
	for key, v := range managerproc.Metrics(families).ByLabels("apiserver_request_total", "verb", "resource", "subresource") {
		if verb, _, _ := strings.Cut(key, " "); verb != "WATCH" && verb != "CONNECT" {
			out[strings.TrimSpace(key)] += v
		}
	}
	return out, nil
}

// apiserverShare renders the apiserver's requests between two scrapes, the manager's part, and
// the most frequent kinds (verb, resource, subresource) from every client, per unit (n of them:
// rollouts, Canaries).
func apiserverShare(before, after map[string]float64, manager, n float64, unit string) string {
	total := 0.0
	byKind := map[string]float64{}
	for key, v := range after {
		if d := v - before[key]; d > 0 {
			total += d
			byKind[key] = d
		}
	}
	if total <= 0 {
		return "n/a"
	}
	kinds := slices.SortedFunc(maps.Keys(byKind), func(a, b string) int {
		return cmp.Or(cmp.Compare(byKind[b], byKind[a]), strings.Compare(a, b))
	})
	var top []string
	for _, k := range kinds[:min(len(kinds), 12)] {
		top = append(top, fmt.Sprintf("%s %.1f", strings.ToLower(k), byKind[k]/n))
	}
	return fmt.Sprintf("%.0f requests (watches apart) from every client, %.1f per %s; the manager's %.0f are %.0f %%; per %s by kind, every client: %s",
		total, total/n, unit, manager, 100*manager/total, unit, strings.Join(top, ", "))
}
