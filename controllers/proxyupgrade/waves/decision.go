package waves

import (
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/internal/planevent"
)

// ActionType is one kind of I/O the controller carries out for a Decision.
type ActionType string

const (
	// ActionPin sets a namespace's pin (Linkerd config.linkerd.io/proxy-version, Istio
	// istio.io/rev) to Value.
	ActionPin ActionType = "Pin"
	// ActionRestart sets the pod-template annotation sluice.dev/restartedAt of workload Kind/Name
	// to Value (the wave's token).
	ActionRestart ActionType = "Restart"
	// ActionEvict evicts pod Pod (UID) of workload Kind/Name through the Eviction API; Value is
	// the wave's token.
	ActionEvict ActionType = "Evict"
)

// Action is one piece of I/O, in the order the controller must carry them out.
type Action struct {
	Type ActionType
	// Wave is the index of the wave the action belongs to.
	Wave      int
	Namespace string
	// Kind and Name of the workload (Restart, Evict).
	Kind, Name string
	// Pod and UID of the pod (Evict).
	Pod, UID string
	// Value is the pin (Pin) or the wave's restart token (Restart, Evict).
	Value string
}

func (a Action) String() string {
	switch a.Type {
	case ActionPin:
		return fmt.Sprintf("pin namespace %s to %s", a.Namespace, a.Value)
	case ActionRestart:
		return fmt.Sprintf("restart %s %s/%s", a.Kind, a.Namespace, a.Name)
	case ActionEvict:
		return fmt.Sprintf("evict pod %s/%s of %s %s", a.Namespace, a.Pod, a.Kind, a.Name)
	}
	return string(a.Type)
}

// Event is a Kubernetes event to record on the ProxyUpgrade: the planners' shared event type.
type Event = planevent.Event

// Notification is an alert for the AlertProviders: sent at most once per run and Key.
type Notification struct {
	// Key dedups the notification within a run (recorded in status.notifications).
	Key string
	// Event names the transition, e.g. Succeeded or Failed.
	Event    string
	Severity sluicev1.AlertSeverity
	Message  string
}

// Hold is why the next wave does not start now.
type Hold struct {
	// Reason is a condition reason: sluicev1.ReasonOutsideWindow or ReasonAwaitingApproval.
	Reason string
	// Message says why and until when.
	Message string
}

// Decision is what to do in this tick.
type Decision struct {
	// Status is the next status; Record adds the effects of the actions that went through.
	// Conditions are left to the controller.
	Status sluicev1.ProxyUpgradeStatus
	// Actions to carry out, in order.
	Actions []Action
	// Events to record, one per transition.
	Events []Event
	// Notifications to send once the status is written.
	Notifications []Notification
	// Hold is set when the next wave waits (window, approval).
	Hold *Hold
	// RequeueAfter is when to look again.
	RequeueAfter time.Duration

	// notes are the reasons the running wave cannot move (Blocked), for lastUpdateAttemptMessage.
	notes []string
	// done are the actions carried out, failures what went wrong, for the update attempt.
	done, failures []string
}

func (d *Decision) normal(reason, format string, args ...any) {
	d.Events = append(d.Events, Event{Type: corev1.EventTypeNormal, Reason: reason, Message: fmt.Sprintf(format, args...)})
}

func (d *Decision) warning(reason, format string, args ...any) {
	d.Events = append(d.Events, Event{Type: corev1.EventTypeWarning, Reason: reason, Message: fmt.Sprintf(format, args...)})
}

// notify adds a notification unless its key was sent in this run.
func (d *Decision) notify(event string, sev sluicev1.AlertSeverity, msg string) {
	key := d.Status.Target + "/" + event
	for _, k := range d.Status.Notifications {
		if k == key {
			return
		}
	}
	d.Status.Notifications = append(d.Status.Notifications, key)
	d.Notifications = append(d.Notifications, Notification{Key: key, Event: event, Severity: sev, Message: msg})
}

// requeue lowers RequeueAfter to after (a zero RequeueAfter means "not set yet").
func (d *Decision) requeue(after time.Duration) {
	if after <= 0 {
		after = time.Millisecond
	}
	if d.RequeueAfter == 0 || after < d.RequeueAfter {
		d.RequeueAfter = after
	}
}

// setPhase moves the upgrade to phase p, stamping lastTransitionTime when it changes.
func (d *Decision) setPhase(p sluicev1.ProxyUpgradePhase, now time.Time) {
	if d.Status.Phase != p {
		d.Status.Phase = p
		d.Status.LastTransitionTime = stamp(now)
	}
}

// ErrBlocked marks an action refused for now without anything being wrong (an eviction a
// PodDisruptionBudget does not allow yet). Wrap it in the error passed to Record.
var ErrBlocked = errors.New("blocked")

// Record adds the outcome of action a to the status: a restart or an eviction that went through
// is recorded with the wave's token, so it is never repeated; a blocked or failed action is noted
// for the wave's lastUpdateAttempt. Call it for every action carried out, then Finish.
func (d *Decision) Record(a Action, err error) {
	switch {
	case errors.Is(err, ErrBlocked):
		d.notes = append(d.notes, strings.TrimPrefix(err.Error(), ErrBlocked.Error()+": "))
		return
	case err != nil:
		d.failures = append(d.failures, fmt.Sprintf("%s: %v", a, err))
		return
	}
	d.done = append(d.done, a.String())
	if a.Wave < 0 || a.Wave >= len(d.Status.Waves) {
		return
	}
	w := &d.Status.Waves[a.Wave]
	switch a.Type {
	case ActionRestart:
		if findRestart(w, a.Kind, a.Namespace, a.Name, a.Value) == nil {
			w.Restarts = append(w.Restarts, sluicev1.WorkloadRestart{Kind: a.Kind, Namespace: a.Namespace, Name: a.Name,
				Method: sluicev1.RestartRollout, Token: a.Value})
			w.Restarted++
		}
	case ActionEvict:
		r := findRestart(w, a.Kind, a.Namespace, a.Name, a.Value)
		if r == nil {
			w.Restarts = append(w.Restarts, sluicev1.WorkloadRestart{Kind: a.Kind, Namespace: a.Namespace, Name: a.Name,
				Method: sluicev1.RestartEvict, Token: a.Value})
			w.Restarted++
			r = &w.Restarts[len(w.Restarts)-1]
		}
		r.Evicted++
		r.LastEvictedUID = a.UID
		w.Evicted++
	}
}

// Finish writes the wave's lastUpdateAttempt, lastUpdateAttemptResult and
// lastUpdateAttemptMessage after the actions (and the notes of this tick): Failed when an action
// failed, Blocked when the wave cannot move, Succeeded when actions went through. Nothing changes
// on a tick with neither actions nor notes.
func (d *Decision) Finish(now time.Time) {
	i, ok := activeWave(&d.Status)
	if !ok {
		i = -1
		for _, a := range d.Actions {
			i = a.Wave
			break
		}
		if i < 0 || i >= len(d.Status.Waves) {
			return
		}
	}
	w := &d.Status.Waves[i]
	var result sluicev1.UpdateAttemptResult
	var parts []string
	switch {
	case len(d.failures) > 0:
		result, parts = sluicev1.UpdateAttemptFailed, d.failures
	case len(d.notes) > 0:
		result, parts = sluicev1.UpdateAttemptBlocked, append(summarize(d.done, "Done: "), d.notes...)
	case len(d.done) > 0:
		result, parts = sluicev1.UpdateAttemptSucceeded, d.done
	default:
		return
	}
	msg := strings.Join(capped(parts, 6), "; ")
	if w.LastUpdateAttemptResult == result && w.LastUpdateAttemptMessage == msg && len(d.done) == 0 && len(d.failures) == 0 {
		return // the same blocked state as before: no new attempt
	}
	w.LastUpdateAttempt = stamp(now)
	w.LastUpdateAttemptResult = result
	w.LastUpdateAttemptMessage = msg
}

func summarize(done []string, prefix string) []string {
	if len(done) == 0 {
		return nil
	}
	return []string{prefix + strings.Join(capped(done, 3), ", ")}
}

// capped keeps the first n items and says how many more there were.
func capped(items []string, n int) []string {
	if len(items) <= n {
		return items
	}
	return append(append([]string(nil), items[:n]...), fmt.Sprintf("and %d more", len(items)-n))
}

func findRestart(w *sluicev1.ProxyUpgradeWave, kind, ns, name, token string) *sluicev1.WorkloadRestart {
	for i := range w.Restarts {
		r := &w.Restarts[i]
		if r.Kind == kind && r.Namespace == ns && r.Name == name && r.Token == token {
			return r
		}
	}
	return nil
}

func stamp(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t.Truncate(time.Second))
	return &mt
}
