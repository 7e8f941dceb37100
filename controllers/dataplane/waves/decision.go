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

// KindRollout is the kind of an Argo Rollouts Rollout, restarted through its spec.restartAt.
const KindRollout = "Rollout"

// ActionType is one kind of I/O the controller carries out for a Decision.
type ActionType string

const (
	// ActionPin sets a namespace's pin (Linkerd config.linkerd.io/proxy-version, Istio
	// istio.io/rev) to Value.
	ActionPin ActionType = "Pin"
	// ActionRestart sets the pod-template annotation sluice.dev/restartedAt of workload Kind/Name
	// to Value (the wave's token), or a Rollout's spec.restartAt.
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

// Event is a Kubernetes event to record on the DataPlane once its status is written: the
// planners' shared event type.
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
	// Reason is a condition reason: ReasonControlPlaneNotReady, ReasonOutsideWindow or
	// ReasonAwaitingApproval.
	Reason string
	// Message says why and until when.
	Message string
}

// Blocker is why a wave cannot move in this tick: an eviction refused by a PodDisruptionBudget,
// a workload that restarted and still runs another version, a workload whose controller cannot
// create pods, pods that came back without the proxy, the control plane not ready.
type Blocker struct {
	// Namespace the blocker is in ("" for the control plane).
	Namespace string
	// Reason is a condition reason, e.g. sluicev1.ReasonEvictionBlocked.
	Reason  string
	Message string
}

// Decision is what to do in this tick.
type Decision struct {
	// Status is the next status; Record adds the effects of the actions that went through.
	// Conditions are left to the controller.
	Status sluicev1.DataPlaneStatus
	// Actions to carry out, in order.
	Actions []Action
	// Events to record, one per transition.
	Events []Event
	// Notifications to send once the status is written.
	Notifications []Notification
	// Hold is set when the next wave waits (control plane, window, approval).
	Hold *Hold
	// Blockers are why the running wave cannot move in this tick (the Blocked condition and
	// the namespaces' rows show them). Record adds the evictions a PodDisruptionBudget refused.
	Blockers []Blocker
	// RequeueAfter is when to look again.
	RequeueAfter time.Duration

	// done are the actions carried out, failures what went wrong, for the update attempt.
	done, failures []string
}

func (d *Decision) normal(reason, format string, args ...any) {
	d.Events = append(d.Events, Event{Type: corev1.EventTypeNormal, Reason: reason, Message: fmt.Sprintf(format, args...)})
}

func (d *Decision) warning(reason, format string, args ...any) {
	d.Events = append(d.Events, Event{Type: corev1.EventTypeWarning, Reason: reason, Message: fmt.Sprintf(format, args...)})
}

// notify adds a notification unless it was sent in this run (key: version/event).
func (d *Decision) notify(event string, sev sluicev1.AlertSeverity, msg string) {
	d.notifyKeyed(d.Status.Version+"/"+event, event, sev, msg)
}

// notifyKeyed adds a notification unless key was sent in this run.
func (d *Decision) notifyKeyed(key, event string, sev sluicev1.AlertSeverity, msg string) {
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
func (d *Decision) setPhase(p sluicev1.DataPlanePhase, now time.Time) {
	if d.Status.Phase != p {
		d.Status.Phase = p
		d.Status.LastTransitionTime = stamp(now)
	}
}

// ErrBlocked marks an action refused for now without anything being wrong (an eviction a
// PodDisruptionBudget does not allow yet). Wrap it in the error passed to Record; its message
// should name the pod and the PodDisruptionBudget.
var ErrBlocked = errors.New("blocked")

func (d *Decision) block(ns, reason, format string, args ...any) {
	d.Blockers = append(d.Blockers, Blocker{Namespace: ns, Reason: reason, Message: fmt.Sprintf(format, args...)})
}

// Record adds the outcome of action a to the status: a restart or an eviction that went through
// is recorded with the wave's token, so it is never repeated; a blocked or failed action is noted
// for the wave's lastUpdateAttempt. Call it for every action carried out, then Finish.
func (d *Decision) Record(a Action, err error) {
	switch {
	case errors.Is(err, ErrBlocked):
		d.block(a.Namespace, sluicev1.ReasonEvictionBlocked, "%s", strings.TrimPrefix(err.Error(), ErrBlocked.Error()+": "))
		return
	case err != nil:
		d.failures = append(d.failures, fmt.Sprintf("%s: %v", a, err))
		return
	}
	d.done = append(d.done, a.String())
	if a.Type == ActionPin {
		d.recordPin(a.Namespace, a.Value)
		return
	}
	if a.Wave < 0 || a.Wave >= len(d.Status.Waves) {
		return
	}
	w := &d.Status.Waves[a.Wave]
	switch a.Type {
	case ActionRestart:
		if findRestart(w, a.Kind, a.Namespace, a.Name, a.Value) == nil {
			method := sluicev1.RestartRollout
			if a.Kind == KindRollout {
				method = sluicev1.RestartAt
			}
			w.Restarts = append(w.Restarts, sluicev1.WorkloadRestart{Kind: a.Kind, Namespace: a.Namespace, Name: a.Name,
				Method: method, Token: a.Value})
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

// Finish writes lastUpdateAttempt, lastUpdateAttemptResult and lastUpdateAttemptMessage after
// the actions (and the blockers of this tick): Failed when an action failed, Blocked when the
// wave cannot move, Succeeded when actions went through. Nothing changes on a quiet tick, nor
// when the same blockers hold as before.
func (d *Decision) Finish(now time.Time) {
	s := &d.Status
	d.applyBlockers()
	var result sluicev1.UpdateAttemptResult
	var parts []string
	switch {
	case len(d.failures) > 0:
		result, parts = sluicev1.UpdateAttemptFailed, d.failures
	case len(d.Blockers) > 0:
		var why []string
		for _, b := range d.Blockers {
			why = append(why, b.Message)
		}
		result, parts = sluicev1.UpdateAttemptBlocked, append(summarize(d.done, "Done: "), why...)
	case len(d.done) > 0:
		result, parts = sluicev1.UpdateAttemptSucceeded, d.done
	default:
		return
	}
	msg := strings.Join(capped(parts, 6), "; ")
	if s.LastUpdateAttemptResult == result && s.LastUpdateAttemptMessage == msg && len(d.done) == 0 && len(d.failures) == 0 {
		return // the same blocked state as before: no new attempt
	}
	s.LastUpdateAttempt = stamp(now)
	s.LastUpdateAttemptResult = result
	s.LastUpdateAttemptMessage = msg
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

func findRestart(w *sluicev1.DataPlaneWave, kind, ns, name, token string) *sluicev1.WorkloadRestart {
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
