package analysis

import (
	"errors"
	"fmt"
	"strings"
	"text/template"
	"text/template/parse"
)

// Bounds of a MetricTemplate query. The CRD refuses longer queries and any other action at
// admission (api/v1alpha1 MetricTemplateSpec.Query); these checks catch objects written before
// that rule, so no template can make the manager allocate or spin.
const (
	// MaxQueryLength is the longest query (template or inline) in bytes.
	MaxQueryLength = 4096
	// MaxRenderedQueryLength is the longest rendered query in bytes: rendering stops with an
	// error beyond it.
	MaxRenderedQueryLength = 16 << 10
)

// templateFields are the values an action may print: {{ .name }}, {{ .namespace }}, … and
// {{ .variables.KEY }} for any KEY.
var templateFields = map[string]bool{"name": true, "namespace": true, "target": true, "service": true, "interval": true}

// errRenderTooLong stops a rendering that outgrows MaxRenderedQueryLength.
var errRenderTooLong = errors.New("the rendered query is longer than the limit")

// parseTemplate parses a MetricTemplate query and checks that it only prints fields: every node
// of its tree is text or an action whose pipeline is one of {{ .name }}, {{ .namespace }},
// {{ .target }}, {{ .service }}, {{ .interval }} or {{ .variables.KEY }} (comments and trim
// markers allowed). Control structures (range, if, with, block, template), function calls
// (printf, len, index, …), pipelines and variables are refused, so rendering costs at most the
// size of the query and its values. errors: ErrTemplate (too long, a syntax error, an action
// that is not a field, naming it and its position).
func parseTemplate(query string) (*template.Template, error) {
	if len(query) > MaxQueryLength {
		return nil, fmt.Errorf("%w: the query is %d bytes long, more than the %d allowed", ErrTemplate, len(query), MaxQueryLength)
	}
	t, err := template.New("query").Option("missingkey=error").Parse(query)
	if err != nil {
		return nil, fmt.Errorf("%w: parsing query: %w", ErrTemplate, err)
	}
	if t.Tree == nil || t.Tree.Root == nil {
		return t, nil
	}
	for _, n := range t.Tree.Root.Nodes {
		if allowedNode(n) {
			continue
		}
		location, _ := t.Tree.ErrorContext(n)
		return nil, fmt.Errorf("%w: %s: %s is not allowed: a query may only print {{ .name }}, {{ .namespace }}, {{ .target }}, {{ .service }}, {{ .interval }} or {{ .variables.KEY }}",
			ErrTemplate, location, describeNode(n))
	}
	return t, nil
}

// allowedNode reports whether n is text, a comment or an action printing one allowed field.
func allowedNode(n parse.Node) bool {
	switch n := n.(type) {
	case *parse.TextNode, *parse.CommentNode:
		return true
	case *parse.ActionNode:
		p := n.Pipe
		if p == nil || p.IsAssign || len(p.Decl) > 0 || len(p.Cmds) != 1 || len(p.Cmds[0].Args) != 1 {
			return false
		}
		f, ok := p.Cmds[0].Args[0].(*parse.FieldNode)
		if !ok {
			return false
		}
		switch len(f.Ident) {
		case 1:
			return templateFields[f.Ident[0]]
		case 2:
			return f.Ident[0] == "variables"
		}
	}
	return false
}

// describeNode names a refused node for a message, shortened to keep the message small.
func describeNode(n parse.Node) string {
	kind := "the action"
	switch n.(type) {
	case *parse.RangeNode:
		kind = "range"
	case *parse.IfNode:
		kind = "if"
	case *parse.WithNode:
		kind = "with"
	case *parse.TemplateNode:
		kind = "template"
	}
	const maxShown = 40
	s := n.String()
	if len(s) > maxShown {
		s = s[:maxShown] + "…"
	}
	return fmt.Sprintf("%s %s", kind, s)
}

// boundedWriter collects at most max bytes; a write beyond fails with errRenderTooLong, which
// stops text/template's Execute.
type boundedWriter struct {
	b   strings.Builder
	max int
}

func (w *boundedWriter) Write(p []byte) (int, error) {
	if w.b.Len()+len(p) > w.max {
		return 0, errRenderTooLong
	}
	return w.b.Write(p)
}
