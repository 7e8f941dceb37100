package analysis

import (
	"fmt"
	"text/template"
	"text/template/parse"

	"github.com/prometheus/prometheus/promql/parser"
)

// promqlParser is Prometheus's own PromQL parser with its default functions.
var promqlParser = parser.NewParser(parser.Options{})

// ValidateTemplateQuery checks a MetricTemplate query the way a check will run it: it renders the
// Go template with placeholder values (every documented variable, and a placeholder for each
// {{ .variables.NAME }} the template uses) and parses the result with Prometheus's PromQL parser.
// errors: ErrTemplate for a template that does not parse or render, or PromQL the parser
// rejects (the parser's message gives the position).
func ValidateTemplateQuery(query string) error {
	t, err := template.New("query").Option("missingkey=error").Parse(query)
	if err != nil {
		return fmt.Errorf("%w: parsing query: %w", ErrTemplate, err)
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
	if _, err := promqlParser.ParseExpr(rendered); err != nil {
		return fmt.Errorf("%w: not valid PromQL once rendered (%s): %w", ErrTemplate, rendered, err)
	}
	return nil
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
