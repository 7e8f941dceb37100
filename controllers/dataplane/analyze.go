package dataplane

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"sluice.dev/sluice/analysis"
	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/dataplane/waves"
	"sluice.dev/sluice/controllers/internal/reconcilekit"
)

// maxConcurrentNamespaces bounds how many namespaces of a wave are analysed at the same time.
const maxConcurrentNamespaces = 4

// analysisFor is the analysis of namespace ns for dp.
func (r *Reconciler) analysisFor(dp *sluicev1.DataPlane, ns string) analysis.NamespaceAnalysis {
	return analysis.NamespaceAnalysis{
		Name: dp.Name, Namespace: ns, Mesh: dp.Spec.Mesh, Metrics: dp.Spec.Analysis.Metrics,
		Interval: waves.Interval(dp.Spec), MetricsServer: dp.Spec.Analysis.MetricsServer,
	}
}

// analyze runs one check of every metric in every namespace of the baking wave. A check fails
// when any metric of any namespace fails. errors: stalled when the analysis cannot run at all.
func (r *Reconciler) analyze(ctx context.Context, dp *sluicev1.DataPlane, namespaces []string, now time.Time) (*waves.Check, error) {
	if r.Analyzer == nil {
		return nil, reconcilekit.Stalled(sluicev1.ReasonInvalidSpec, "spec.analysis has metrics but this controller has no analyzer")
	}
	checks := make([]analysis.Check, len(namespaces))
	errs := make([]error, len(namespaces))
	sem := make(chan struct{}, maxConcurrentNamespaces)
	var wg sync.WaitGroup
	for i, ns := range namespaces {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			checks[i], errs[i] = r.Analyzer.AnalyzeNamespace(ctx, r.analysisFor(dp, ns), now)
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	out := &waves.Check{}
	var failures []string
	for i, ns := range namespaces {
		if errs[i] != nil {
			return nil, reconcilekit.Stalled(sluicev1.ReasonInvalidSpec, "analysis of namespace %s: %w", ns, errs[i])
		}
		for _, res := range checks[i].Results {
			out.Results = append(out.Results, sluicev1.NamespaceMetricResult{Namespace: ns, MetricResult: res})
		}
		// A DataPlane wave fails on errors as well as on failures: it has no error limit.
		if o := checks[i].Outcome(); o == sluicev1.CheckFailed || o == sluicev1.CheckError {
			failures = append(failures, fmt.Sprintf("%s: %s", ns, checks[i].Summary()))
		}
	}
	out.Failed = len(failures) > 0
	out.Summary = strings.Join(failures, "; ")
	return out, nil
}
