package main

import (
	"context"
	"fmt"
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
// long request, whatever it delivers), by verb (apiserver_request_total).
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
	for verb, v := range managerproc.Metrics(families).ByLabels("apiserver_request_total", "verb") {
		if verb != "WATCH" && verb != "CONNECT" {
			out[verb] += v
		}
	}
	return out, nil
}

// apiserverShare renders the apiserver's requests between two scrapes and the manager's part.
func apiserverShare(before, after map[string]float64, manager float64) string {
	total := 0.0
	for verb, v := range after {
		total += v - before[verb]
	}
	if total <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.0f requests (watches apart) from every client; the manager's %.0f are %.0f %%", total, manager, 100*manager/total)
}
