// Package providertest holds assertions the provider tests share.
package providertest

import (
	"context"
	"fmt"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/providers"
)

// VerifyWeight reports providers.ErrWeightDrift (wrapped, with both splits) when the route's
// split, read back through r.GetRoutes, differs from want.
func VerifyWeight(ctx context.Context, r providers.Router, canary *sluicev1.Canary, want providers.Weights) error {
	got, err := r.GetRoutes(ctx, canary)
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("%w: route has primary=%d canary=%d, want primary=%d canary=%d",
			providers.ErrWeightDrift, got.Primary, got.Canary, want.Primary, want.Canary)
	}
	return nil
}
