package canary

import (
	"errors"
	"fmt"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/internal/reconcilekit"
)

// checkAccess refuses, before anything is read, queried or called, what a shared cluster must not
// allow: templateRefs and providerRefs into namespaces the reference policy does not allow, and
// webhook URLs or a metricsServer the egress policy refuses. errors: stalled, naming each refused
// reference or URL (CrossNamespaceRefRefused first, then DestinationRefused).
func (r *Reconciler) checkAccess(canary *sluicev1.Canary) error {
	if err := r.Refs.CheckCanary(canary); err != nil {
		return reconcilekit.Stalled(sluicev1.ReasonCrossNamespaceRef, "%w", err)
	}
	var refused []error
	if addr := canary.Spec.MetricsServer; addr != "" {
		if err := r.Egress.CheckURL(addr); err != nil {
			refused = append(refused, fmt.Errorf("spec.metricsServer: %w", err))
		}
	}
	for _, h := range canary.Spec.Analysis.Webhooks {
		if h.URL == "" {
			continue
		}
		if err := r.Egress.CheckURL(h.URL); err != nil {
			refused = append(refused, fmt.Errorf("webhook %q: %w", h.Name, err))
		}
	}
	if len(refused) > 0 {
		return reconcilekit.Stalled(sluicev1.ReasonDestinationRefused, "%w", errors.Join(refused...))
	}
	return nil
}
