// Package windows decides whether now lies inside a progression window: a cron schedule (robfig
// cron, standard five fields) that opens a window for a duration, in a time zone. Canaries advance
// a step, and data-plane waves start, only inside a window.
package windows

import (
	"errors"
	"fmt"
	"time"

	"github.com/robfig/cron/v3"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// State is the outcome of Evaluate.
type State struct {
	// Open is true when now lies inside at least one window (always true without windows).
	Open bool
	// NextOpen is when the next window opens, when Open is false.
	NextOpen time.Time
}

// ErrNeverOpens means a window's schedule never fires (e.g. "0 0 30 2 *", February 30th): the
// window can never open. Callers fail closed: nothing advances, and the user is told.
var ErrNeverOpens = errors.New("window never opens")

// Evaluate reports whether now lies inside any of ws and, if not, when the next one opens.
// errors: an unparsable schedule, duration or time zone, or ErrNeverOpens, naming the window's
// index. Every window is checked, so a broken one is reported even while another is open.
func Evaluate(ws []sluicev1.ProgressionWindow, now time.Time) (State, error) {
	if len(ws) == 0 {
		return State{Open: true}, nil
	}
	var next time.Time
	open := false
	for i, w := range ws {
		sched, dur, err := parse(w)
		if err != nil {
			return State{}, fmt.Errorf("windows[%d]: %w", i, err)
		}
		n := sched.Next(now)
		if n.IsZero() {
			// robfig/cron returns the zero time when the schedule matches no time in five years.
			return State{}, fmt.Errorf("windows[%d]: schedule %q: %w", i, w.Schedule, ErrNeverOpens)
		}
		// The latest opening at or before now, if any, is the first opening after now-dur.
		if start := sched.Next(now.Add(-dur)); !start.IsZero() && !start.After(now) {
			open = true
		}
		if next.IsZero() || n.Before(next) {
			next = n
		}
	}
	if open {
		return State{Open: true}, nil
	}
	return State{NextOpen: next}, nil
}

func parse(w sluicev1.ProgressionWindow) (cron.Schedule, time.Duration, error) {
	dur, err := time.ParseDuration(w.Duration)
	if err != nil || dur <= 0 {
		return nil, 0, fmt.Errorf("duration %q is not a positive duration", w.Duration)
	}
	spec := w.Schedule
	if w.TimeZone != "" {
		if _, err := time.LoadLocation(w.TimeZone); err != nil {
			return nil, 0, fmt.Errorf("time zone %q: %w", w.TimeZone, err)
		}
		spec = "CRON_TZ=" + w.TimeZone + " " + spec
	}
	sched, err := cron.ParseStandard(spec)
	if err != nil {
		return nil, 0, fmt.Errorf("schedule %q: %w", w.Schedule, err)
	}
	return sched, dur, nil
}
