package analysis

import (
	"fmt"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// confine confines the queries of plan p to canary c's namespace when a tenant wrote them: the
// author is the namespace of the MetricTemplate, or the Canary's own for an inline query. Queries
// written in Refs.ControllerNamespace (the platform team's) and built-in queries (Sluice's) run
// as written, as does everything when Options.TenantNamespaceLabel is empty. errors:
// ErrInvalidQuery for a query Prometheus's parser rejects.
func (e *Engine) confine(p *plan, c *sluicev1.Canary, author string) error {
	label := e.opts.TenantNamespaceLabel
	if label == "" || (author == e.opts.Refs.ControllerNamespace && author != "") {
		return nil
	}
	var err error
	if p.query, err = ConfineQuery(p.query, label, c.Namespace); err != nil {
		return err
	}
	if p.primaryQuery != "" {
		p.primaryQuery, err = ConfineQuery(p.primaryQuery, label, c.Namespace)
	}
	return err
}

// ConfineQuery returns PromQL q with the matcher label="namespace" added to every series
// selector (in range selectors, subqueries and function arguments too), as Prometheus's own
// parser reads q, so the query can only read series of that namespace: the way prom-label-proxy
// confines a tenant. A selector that already matches on label keeps its matcher, so it selects
// nothing unless both agree. The result is Prometheus's canonical form of the query.
// errors: ErrInvalidQuery for a query the parser rejects.
func ConfineQuery(q, label, namespace string) (string, error) {
	expr, err := promqlParser.ParseExpr(q)
	if err != nil {
		return "", fmt.Errorf("%w: not valid PromQL (%s): %w", ErrInvalidQuery, q, err)
	}
	parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			vs.LabelMatchers = append(vs.LabelMatchers, labels.MustNewMatcher(labels.MatchEqual, label, namespace))
		}
		return nil
	})
	return expr.String(), nil
}
