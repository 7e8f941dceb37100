package plugin

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/cmd/kubectl-sluice/internal/view"
)

// Phases of a DataPlane in which a run is in flight: abort has something to roll back.
var dataPlaneInFlight = []sluicev1.DataPlanePhase{
	sluicev1.DataPlanePending, sluicev1.DataPlaneWaiting, sluicev1.DataPlaneProgressing,
}

// AbortDataPlane asks the controller to roll the wave in flight back now (between waves: to start
// no further wave). errors: not found, no run in flight (without Force), the patch refused.
func AbortDataPlane(ctx context.Context, c client.Client, w io.Writer, name string, now time.Time, o LeverOptions) error {
	return requestDataPlane(ctx, c, w, name, now, o, AnnotationAbort, "rollback", func(dp *sluicev1.DataPlane) error {
		if !slices.Contains(dataPlaneInFlight, dp.Status.Phase) {
			return fmt.Errorf("dataplane %s is %s: no run in flight to abort (--force sets %s anyway)", name, view.DataPlanePhase(dp), AnnotationAbort)
		}
		return nil
	})
}

// ApproveDataPlane lets the fleet waves start after the canary wave (spec.requireApproval).
// errors: not found, not waiting for approval (without Force), the patch refused.
func ApproveDataPlane(ctx context.Context, c client.Client, w io.Writer, name string, now time.Time, o LeverOptions) error {
	return requestDataPlane(ctx, c, w, name, now, o, sluicev1.AnnotationApproveFleet, "fleet approval", func(dp *sluicev1.DataPlane) error {
		for _, cond := range dp.Status.Conditions {
			if cond.Type == sluicev1.ConditionReady && cond.Reason == sluicev1.ReasonAwaitingApproval {
				return nil
			}
		}
		return fmt.Errorf("dataplane %s is %s, not waiting for approval (--force sets %s anyway)", name, view.DataPlanePhase(dp),
			sluicev1.AnnotationApproveFleet)
	})
}

// RetryDataPlane asks the controller to run the declared version again after a run ended
// RolledBack or Failed. errors: not found, not ended so (without Force), the patch refused.
func RetryDataPlane(ctx context.Context, c client.Client, w io.Writer, name string, now time.Time, o LeverOptions) error {
	return requestDataPlane(ctx, c, w, name, now, o, AnnotationRetry, "retry", func(dp *sluicev1.DataPlane) error {
		if p := dp.Status.Phase; p != sluicev1.DataPlaneRolledBack && p != sluicev1.DataPlaneFailed {
			return fmt.Errorf("dataplane %s is %s, not RolledBack or Failed: nothing to retry (--force sets %s anyway)", name,
				view.DataPlanePhase(dp), AnnotationRetry)
		}
		return nil
	})
}

// SuspendDataPlane sets (pause) or clears (resume) spec.suspend.
// errors: not found, the patch refused.
func SuspendDataPlane(ctx context.Context, c client.Client, w io.Writer, name string, on bool) error {
	dp, err := fetchDataPlane(ctx, c, name)
	if err != nil {
		return err
	}
	if err := mergePatchDataPlane(ctx, c, dp, map[string]any{"spec": map[string]any{"suspend": on}}); err != nil {
		return err
	}
	verb := "resumed"
	if on {
		verb = "paused"
	}
	_, err = fmt.Fprintf(w, "dataplane %s: %s (spec.suspend=%v)\n", name, verb, on)
	return err
}

// requestDataPlane sets a request annotation to the RFC 3339 time now, after allowed (skipped
// with Force) accepted the DataPlane's phase.
func requestDataPlane(ctx context.Context, c client.Client, w io.Writer, name string, now time.Time, o LeverOptions,
	annotation, what string, allowed func(*sluicev1.DataPlane) error) error {
	dp, err := fetchDataPlane(ctx, c, name)
	if err != nil {
		return err
	}
	if !o.Force {
		if err := allowed(dp); err != nil {
			return err
		}
	}
	stamp := now.UTC().Format(time.RFC3339)
	if err := mergePatchDataPlane(ctx, c, dp, map[string]any{"metadata": map[string]any{"annotations": map[string]string{annotation: stamp}}}); err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "dataplane %s: %s requested (%s=%s)\n", name, what, annotation, stamp)
	return err
}
