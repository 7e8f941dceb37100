package analysis

import (
	"fmt"
	"slices"
	"text/template"
	"text/template/parse"

	"github.com/prometheus/prometheus/promql/parser"
)

// promqlParser is Prometheus's own PromQL parser with its default functions.
var promqlParser = parser.NewParser(parser.Options{})

// ValidateTemplateQuery checks a MetricTemplate query the way a check will run it: it checks that
// the template only prints fields (parseTemplate), renders it with placeholder values (every
// documented variable, and a placeholder for each {{ .variables.NAME }} the template uses) and
// parses the result with Prometheus's PromQL parser. errors: ErrTemplate for a template that is
// too long, does not parse, uses anything but field actions or does not render, or PromQL the
// parser rejects (the parser's message gives the position).
func ValidateTemplateQuery(query string) error {
	t, err := parseTemplate(query)
	if err != nil {
		return err
	}
	vars := TemplateVars{Name: "canary", Namespace: "default", Target: "app", Service: "app", Interval: "1m",
		Variables: map[string]string{}}
	for _, name := range templateVariables(t.Tree.Root) {
		vars.Variables[name] = "placeholder"
	}
	rendered, err := RenderQuery(query, vars)
	if err != nil {
		return err
	}
	return checkPromQL(rendered, "once rendered ")
}

// TemplateVariables lists, sorted and once each, the {{ .variables.NAME }} a MetricTemplate query
// needs from every Canary that uses it (its metric's templateVariables). nil when the query does
// not parse as a template.
func TemplateVariables(query string) []string {
	t, err := template.New("query").Parse(query)
	if err != nil {
		return nil
	}
	names := templateVariables(t.Tree.Root)
	slices.Sort(names)
	return slices.Compact(names)
}

// checkPromQL parses q with Prometheus's parser and checks that its result can be judged: an
// instant vector (one series) or a scalar. A range vector (foo[5m]) or a string never can.
// errors: ErrTemplate with the parser's message, or naming the result type.
func checkPromQL(q, how string) error {
	expr, err := promqlParser.ParseExpr(q)
	if err != nil {
		return fmt.Errorf("%w: not valid PromQL %s(%s): %w", ErrTemplate, how, q, err)
	}
	typ := expr.Type()
	switch typ {
	case parser.ValueTypeVector, parser.ValueTypeScalar:
		return nil
	case parser.ValueTypeMatrix:
		typ = "range vector"
	}
	return fmt.Errorf("%w: the query %s(%s) returns a %s, which can never be judged: it must return one number (an instant vector with one series, or a scalar)",
		ErrTemplate, how, q, typ)
}

// templateVariables lists the NAMEs of the {{ .variables.NAME }} fields a template refers to.
func templateVariables(n parse.Node) []string {
	var out []string
	var walk func(parse.Node)
	walk = func(n parse.Node) {
		switch n := n.(type) {
		case *parse.ListNode:
			if n == nil {
				return
			}
			for _, c := range n.Nodes {
				walk(c)
			}
		case *parse.ActionNode:
			walk(n.Pipe)
		case *parse.PipeNode:
			if n == nil {
				return
			}
			for _, c := range n.Cmds {
				walk(c)
			}
		case *parse.CommandNode:
			for _, a := range n.Args {
				walk(a)
			}
		case *parse.FieldNode:
			if len(n.Ident) >= 2 && n.Ident[0] == "variables" {
				out = append(out, n.Ident[1])
			}
		case *parse.IfNode:
			walk(n.Pipe)
			walk(n.List)
			walk(n.ElseList)
		case *parse.RangeNode:
			walk(n.Pipe)
			walk(n.List)
			walk(n.ElseList)
		case *parse.WithNode:
			walk(n.Pipe)
			walk(n.List)
			walk(n.ElseList)
		case *parse.TemplateNode:
			walk(n.Pipe)
		}
	}
	walk(n)
	return out
}
