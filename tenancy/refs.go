package tenancy

import (
	"errors"
	"fmt"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// ErrCrossNamespaceRef means a reference names a namespace the referring object may not reach.
// Test it with errors.Is.
var ErrCrossNamespaceRef = errors.New("cross-namespace reference refused")

// RefPolicy decides which namespaces references may point into. The zero value allows only
// same-namespace references.
type RefPolicy struct {
	// ControllerNamespace is the controller's own namespace; every object may reference it.
	ControllerNamespace string
	// AllowCrossNamespace allows references into every namespace.
	AllowCrossNamespace bool
}

// Allows reports whether an object in namespace from may reference an object in namespace to.
// from "" is a cluster-scoped object: allowed. to "" means from's own namespace: allowed.
func (p RefPolicy) Allows(from, to string) bool {
	return from == "" || to == "" || to == from || p.AllowCrossNamespace ||
		(p.ControllerNamespace != "" && to == p.ControllerNamespace)
}

// Check returns nil when Allows(from, to), else ErrCrossNamespaceRef naming the reference: what
// refers (e.g. `metric "errors" templateRef`), the kind, and to/name.
func (p RefPolicy) Check(from, what, kind, to, name string) error {
	if p.Allows(from, to) {
		return nil
	}
	allowed := fmt.Sprintf("namespace %s", from)
	if p.ControllerNamespace != "" {
		allowed += fmt.Sprintf(" or the controller's namespace %s", p.ControllerNamespace)
	}
	return fmt.Errorf("%w: %s names %s %s/%s; only %s may be referenced (the controller's --allow-cross-namespace-refs allows every namespace)",
		ErrCrossNamespaceRef, what, kind, to, name, allowed)
}

// CheckCanary checks every reference of c's spec that may name a namespace: each metric's
// templateRef and each alert's providerRef. It reads nothing. errors: errors.Join of one
// ErrCrossNamespaceRef per refused reference, in spec order.
func (p RefPolicy) CheckCanary(c *sluicev1.Canary) error {
	var errs []error
	for i := range c.Spec.Analysis.Metrics {
		m := &c.Spec.Analysis.Metrics[i]
		if m.TemplateRef != nil {
			errs = append(errs, p.Check(c.Namespace, fmt.Sprintf("metric %q templateRef", m.Name), "MetricTemplate",
				m.TemplateRef.Namespace, m.TemplateRef.Name))
		}
	}
	for _, a := range c.Spec.Analysis.Alerts {
		errs = append(errs, p.Check(c.Namespace, fmt.Sprintf("alert %q providerRef", a.Name), "AlertProvider",
			a.ProviderRef.Namespace, a.ProviderRef.Name))
	}
	return errors.Join(errs...)
}
