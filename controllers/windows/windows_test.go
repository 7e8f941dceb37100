package windows

import (
	"errors"
	"strings"
	"testing"
	"time"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

func TestEvaluate(t *testing.T) {
	weekdays9to17 := []sluicev1.ProgressionWindow{{Schedule: "0 9 * * 1-5", Duration: "8h", TimeZone: "Europe/Berlin"}}
	berlin, _ := time.LoadLocation("Europe/Berlin")
	for _, tt := range []struct {
		name     string
		ws       []sluicev1.ProgressionWindow
		now      time.Time
		open     bool
		nextOpen time.Time
	}{
		{"no windows is always open", nil, time.Now(), true, time.Time{}},
		{"monday 10:00 inside", weekdays9to17, time.Date(2026, 11, 30, 10, 0, 0, 0, berlin), true, time.Time{}},
		{"monday 09:00 sharp inside", weekdays9to17, time.Date(2026, 11, 30, 9, 0, 0, 0, berlin), true, time.Time{}},
		{"monday 17:00 closed", weekdays9to17, time.Date(2026, 11, 30, 17, 0, 0, 0, berlin), false,
			time.Date(2026, 12, 1, 9, 0, 0, 0, berlin)},
		{"saturday closed until monday", weekdays9to17, time.Date(2026, 12, 5, 12, 0, 0, 0, berlin), false,
			time.Date(2026, 12, 7, 9, 0, 0, 0, berlin)},
		{"UTC default", []sluicev1.ProgressionWindow{{Schedule: "30 2 * * *", Duration: "1h"}},
			time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC), true, time.Time{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st, err := Evaluate(tt.ws, tt.now)
			if err != nil {
				t.Fatal(err)
			}
			if st.Open != tt.open || !st.NextOpen.Equal(tt.nextOpen) {
				t.Fatalf("got open=%v next=%v, want open=%v next=%v", st.Open, st.NextOpen, tt.open, tt.nextOpen)
			}
		})
	}
}

func TestEvaluateErrors(t *testing.T) {
	for _, w := range []sluicev1.ProgressionWindow{
		{Schedule: "not a cron", Duration: "1h"},
		{Schedule: "0 9 * * *", Duration: "soon"},
		{Schedule: "0 9 * * *", Duration: "1h", TimeZone: "Mars/Olympus"},
	} {
		if _, err := Evaluate([]sluicev1.ProgressionWindow{w}, time.Now()); err == nil {
			t.Errorf("%+v: no error", w)
		}
	}
}

// TestWindowThatNeverOpensFailsClosed: a schedule that never fires (February 30th) is an error
// naming the window, even next to an open one, never "open".
func TestWindowThatNeverOpensFailsClosed(t *testing.T) {
	now := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	never := sluicev1.ProgressionWindow{Schedule: "0 0 30 2 *", Duration: "1h"}
	always := sluicev1.ProgressionWindow{Schedule: "* * * * *", Duration: "1h"}
	for _, ws := range [][]sluicev1.ProgressionWindow{{never}, {always, never}} {
		st, err := Evaluate(ws, now)
		if !errors.Is(err, ErrNeverOpens) || st.Open || !strings.Contains(err.Error(), "windows[") {
			t.Fatalf("Evaluate(%v) = %+v, %v; want ErrNeverOpens naming the window, not open", ws, st, err)
		}
	}
}
