package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/cmd/kubectl-sluice/internal/view"
)

// WatchOptions tune Watch.
type WatchOptions struct {
	// Interval between two reads of the Canary; default 2s.
	Interval time.Duration
	// Terminal draws a progress bar redrawn in place; otherwise Watch writes one line per change.
	Terminal bool
	// Now stamps the lines; default time.Now.
	Now func() time.Time
}

// ErrRunFailed is returned by Watch when the run it followed was rolled back.
var ErrRunFailed = errors.New("the canary run failed and was rolled back")

// observed is what Watch reports a change of. transition (status.lastTransitionTime) catches a
// whole run that went by between two reads, back to the same phase.
type observed struct {
	phase          sluicev1.CanaryPhase
	weight, failed int32
	transition     time.Time
}

// Watch polls a Canary and reports every change of phase, weight or failed checks. Piped, each
// change is one line "HH:MM:SS phase weight failed"; in a terminal, a progress bar of the weight
// against the maximum weight, with a line kept for every phase.
//
// It returns when a run ends while watched: nil once it reaches Succeeded, ErrRunFailed once it
// reaches Failed. It also returns when ctx ends (nil) and when the Canary is deleted.
// errors: the Canary not found or unreadable, ErrRunFailed.
func Watch(ctx context.Context, c client.Client, w io.Writer, key types.NamespacedName, o WatchOptions) error {
	if o.Interval <= 0 {
		o.Interval = 2 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	var last *observed
	ticker := time.NewTicker(o.Interval)
	defer ticker.Stop()
	for {
		cn := &sluicev1.Canary{}
		err := c.Get(ctx, key, cn)
		switch {
		case ctx.Err() != nil:
			return endLine(w, o, last, nil)
		case apierrors.IsNotFound(err) && last != nil:
			return endLine(w, o, last, fmt.Errorf("canary %s was deleted", key))
		case apierrors.IsNotFound(err):
			return fmt.Errorf("canary %q not found in namespace %q", key.Name, key.Namespace)
		case err != nil && deadlineNear(ctx):
			// client-go's rate limiter refuses a request that would outlive the deadline: that is
			// the deadline, not a read failure.
			<-ctx.Done()
			return endLine(w, o, last, nil)
		case err != nil:
			return endLine(w, o, last, fmt.Errorf("reading canary %s: %w", key, err))
		}
		now := observed{phase: cn.Status.Phase, weight: cn.Status.CanaryWeight, failed: cn.Status.FailedChecks}
		if t := cn.Status.LastTransitionTime; t != nil {
			now.transition = t.Time
		}
		if last == nil || !now.same(*last) {
			if err := report(w, o, cn, last, now); err != nil {
				return err
			}
			ended := last != nil && (now.phase != last.phase || !now.transition.Equal(last.transition))
			last = &now
			if ended && now.phase == sluicev1.CanaryPhaseSucceeded {
				return endLine(w, o, last, nil)
			}
			if ended && now.phase == sluicev1.CanaryPhaseFailed {
				return endLine(w, o, last, ErrRunFailed)
			}
		}
		select {
		case <-ctx.Done():
			return endLine(w, o, last, nil)
		case <-ticker.C:
		}
	}
}

func (o observed) same(p observed) bool {
	return o.phase == p.phase && o.weight == p.weight && o.failed == p.failed && o.transition.Equal(p.transition)
}

func report(w io.Writer, o WatchOptions, cn *sluicev1.Canary, last *observed, now observed) error {
	stamp := o.Now().Format("15:04:05")
	if !o.Terminal {
		_, err := fmt.Fprintf(w, "%s %s %d %d\n", stamp, view.Phase(cn), now.weight, now.failed)
		return err
	}
	// Keep the previous phase's bar on its own line; redraw the current one in place.
	prefix := "\r\x1b[2K"
	if last != nil && last.phase != now.phase {
		prefix = "\n"
	}
	_, err := fmt.Fprintf(w, "%s%s %-16s %s %3d/%d%%  failed %d/%d", prefix, stamp, view.Phase(cn),
		Bar(now.weight, view.MaxWeight(cn.Spec.Analysis), 30), now.weight, view.MaxWeight(cn.Spec.Analysis),
		now.failed, cn.Spec.Analysis.Threshold)
	return err
}

// endLine finishes the terminal's bar line, so the shell prompt starts on a line of its own.
func endLine(w io.Writer, o WatchOptions, last *observed, err error) error {
	if o.Terminal && last != nil {
		fmt.Fprintln(w)
	}
	return err
}

// Bar draws weight out of total as a bar of width cells: "[#######.......]".
func Bar(weight, total int32, width int) string {
	filled := 0
	if total > 0 {
		filled = int(int64(weight) * int64(width) / int64(total))
	}
	filled = min(max(filled, 0), width)
	return "[" + strings.Repeat("#", filled) + strings.Repeat(".", width-filled) + "]"
}

// deadlineNear reports whether ctx ends within a second.
func deadlineNear(ctx context.Context) bool {
	dl, ok := ctx.Deadline()
	return ok && time.Until(dl) < time.Second
}
