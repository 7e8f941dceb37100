package plugin

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
)

// age renders how long ago t was, as kubectl's AGE column does; "-" for no time.
func age(t *metav1.Time, now time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

// when renders t with how far it is from now: "2026-01-02T15:04:05Z (3m ago)" or "(in 40s)".
func when(t time.Time, now time.Time) string {
	s := t.UTC().Format(time.RFC3339)
	switch d := t.Sub(now); {
	case d > 0:
		return s + " (in " + duration.HumanDuration(d) + ")"
	case d > -time.Second:
		return s + " (now)"
	default:
		return s + " (" + duration.HumanDuration(-d) + " ago)"
	}
}
