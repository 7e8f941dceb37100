package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/cmd/kubectl-sluice/internal/view"
)

// ErrDataPlaneRunFailed is returned by WatchDataPlane when the run it followed ended RolledBack
// or Failed.
var ErrDataPlaneRunFailed = errors.New("the data plane run was rolled back or failed")

// WatchDataPlane polls a DataPlane and prints one line per change of phase, wave or counts:
// "HH:MM:SS phase wave N desired/current". It returns nil once the run it watched is UpToDate,
// ErrDataPlaneRunFailed once it ended RolledBack or Failed (Incomplete and Drifted need the
// user and are reported, not waited for), and nil when ctx ends.
// errors: the DataPlane not found or unreadable, ErrDataPlaneRunFailed.
func WatchDataPlane(ctx context.Context, c client.Client, w io.Writer, name string, o WatchOptions) error {
	if o.Interval <= 0 {
		o.Interval = 2 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	last := ""
	ticker := time.NewTicker(o.Interval)
	defer ticker.Stop()
	for {
		dp := &sluicev1.DataPlane{}
		err := c.Get(ctx, types.NamespacedName{Name: name}, dp)
		switch {
		case ctx.Err() != nil:
			return nil
		case apierrors.IsNotFound(err):
			return fmt.Errorf("dataplane %q not found", name)
		case err != nil:
			return fmt.Errorf("reading dataplane %s: %w", name, err)
		}
		s := dp.Status
		line := fmt.Sprintf("%s %s wave %d %d/%d", view.DataPlanePhase(dp), orDash(s.Version), s.CurrentWave, s.Current, s.Desired)
		if line != last {
			fmt.Fprintf(w, "%s %s\n", o.Now().Format("15:04:05"), line)
		}
		changed := last != "" && line != last
		last = line
		if s.Version == view.Declared(dp) && (changed || s.ObservedGeneration == dp.Generation) {
			switch s.Phase {
			case sluicev1.DataPlaneUpToDate:
				return nil
			case sluicev1.DataPlaneRolledBack, sluicev1.DataPlaneFailed:
				return ErrDataPlaneRunFailed
			case sluicev1.DataPlaneIncomplete, sluicev1.DataPlaneDrifted:
				fmt.Fprintf(w, "%s %s: see kubectl sluice status dataplane %s\n", o.Now().Format("15:04:05"), s.Phase, name)
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}
