package canary

import (
	"context"
	"errors"
	"fmt"

	"sluice.dev/sluice/analysis"
	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/internal/reconcilekit"
)

// queryValidator is implemented by analyzers that can tell, before a check, that a metric's
// query can never be judged (analysis.Engine.ValidateQueries).
type queryValidator interface {
	ValidateQueries(ctx context.Context, canary *sluicev1.Canary) error
}

// validateQueries stalls (reason InvalidQuery, naming the metric, the MetricTemplate and the
// parser's message; InvalidSpec for a missing template or more metrics servers than allowed,
// naming the metrics) a Canary whose metric query can never be judged: before a run no traffic
// moves to the canary; during one it is the planner's stall (a configuration error, not
// "metrics unavailable"), and the run ends at the progress deadline naming it.
// errors: the stall; API errors reading the templates.
func (r *Reconciler) validateQueries(ctx context.Context, canary *sluicev1.Canary) error {
	v, ok := r.Analyzer.(queryValidator)
	if !ok {
		return nil
	}
	err := v.ValidateQueries(ctx, canary)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, analysis.ErrInvalidQuery):
		return reconcilekit.Stalled(sluicev1.ReasonInvalidQuery, "analysis: %w", err)
	case errors.Is(err, analysis.ErrTemplate), errors.Is(err, analysis.ErrInvalidSpec):
		// A missing MetricTemplate, more metrics servers than allowed: a spec problem.
		return reconcilekit.Stalled(sluicev1.ReasonInvalidSpec, "analysis: %w", err)
	}
	return fmt.Errorf("validating metric queries: %w", err)
}
