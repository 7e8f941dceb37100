package plan

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/internal/planevent"
)

// Action is one piece of I/O the controller carries out for a Decision, in order.
type Action string

const (
	// ActionScaleCanaryUp scales the target to the primary's replica count (at least 1).
	ActionScaleCanaryUp Action = "ScaleCanaryUp"
	// ActionScaleCanaryDown scales the target to zero replicas.
	ActionScaleCanaryDown Action = "ScaleCanaryDown"
	// ActionPromotePrimary copies the target's pod template and tracked configs to the primary.
	ActionPromotePrimary Action = "PromotePrimary"
	// ActionSetWeights routes Decision.Status.CanaryWeight percent to the canary and the rest to
	// the primary, in one write.
	ActionSetWeights Action = "SetWeights"
	// ActionABRoutesOn routes the requests matching spec.analysis.match to the canary (A/B
	// routing, providers.Router.SetABRoutes on). Decide emits it last, and only with the canary
	// ready.
	ActionABRoutesOn Action = "ABRoutesOn"
	// ActionABRoutesOff removes the A/B routing: every request follows the weights. Decide emits
	// it first, before any action that scales the canary down.
	ActionABRoutesOff Action = "ABRoutesOff"
	// ActionRestorePrimary puts the primary back on status.lastPromotedSpec (its pod template and
	// configs as they were promoted): a rollback after the primary had already been promoted.
	ActionRestorePrimary Action = "RestorePrimary"
)

// Decision is what to do in this tick.
type Decision struct {
	// Status is the Canary's next status, to be written only when every action succeeded.
	// Conditions are left to the controller.
	Status sluicev1.CanaryStatus
	// Actions to carry out, in order.
	Actions []Action
	// Events to record on the Canary, one per transition.
	Events []planevent.Event
	// PrimaryReplicas is the replica count ActionScalePrimaryUp asks for.
	PrimaryReplicas int32
	// RequeueAfter is when to look again.
	RequeueAfter time.Duration
	// StatusFirst says the status must be written before the actions run. Decide sets it when the
	// actions move traffic back to the primary (rollback, cancel, abort): if an action is then
	// lost, the next tick repairs it from the status (idle phases put the route and the canary's
	// replicas back to what status says); if the status were written last and lost, the run would
	// still be Progressing and move traffic forward again. Forward moves write the status last: a
	// lost status is recovered from the route and the primary (see recoverLostWrites). The start
	// of a promotion writes it first too (startPromotion): its writes are several, and Promoting
	// retries them.
	StatusFirst bool
	// Waiting, during initialization, says what the primary is waiting on (for the conditions).
	Waiting *Hold
	// Stall, during initialization, reports it stalled past the progress deadline with its root
	// cause: the controller sets the Stalled condition and records the event once.
	Stall *Hold
}

// Has reports whether the decision carries action a.
func (d *Decision) Has(a Action) bool {
	for _, x := range d.Actions {
		if x == a {
			return true
		}
	}
	return false
}

func (d *Decision) do(a ...Action) { d.Actions = append(d.Actions, a...) }

func (d *Decision) normal(reason, msg string) {
	d.Events = append(d.Events, planevent.Normal(reason, msg))
}

func (d *Decision) warning(reason, msg string) {
	d.Events = append(d.Events, planevent.Warning(reason, msg))
}

// gateWarning records a warning about gate g, muted when g's failing webhooks mute alerts.
func (d *Decision) gateWarning(reason, msg string, g GateResult) {
	e := planevent.Warning(reason, msg)
	e.Muted = g.Muted
	d.Events = append(d.Events, e)
}

// setPhase moves to phase p, stamping lastTransitionTime when it changes.
func (d *Decision) setPhase(p sluicev1.CanaryPhase, now time.Time) {
	if d.Status.Phase != p {
		d.Status.Phase = p
		t := metav1.NewTime(now)
		d.Status.LastTransitionTime = &t
	}
}

// setWeight routes w percent to the canary.
func (d *Decision) setWeight(w int32) {
	d.Status.CanaryWeight = w
	if !d.Has(ActionSetWeights) {
		d.do(ActionSetWeights)
	}
}

func stamp(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t)
	return &mt
}

// Timing and threshold defaults, as in Flagger.
const (
	DefaultInterval                = time.Minute
	DefaultThreshold               = 5
	DefaultProgressDeadlineSeconds = 600
	DefaultReadyThreshold          = 100
	// DefaultConsecutiveErrorLimit is analysis.consecutiveErrorLimit's default, as Argo Rollouts'.
	DefaultConsecutiveErrorLimit = 4
	// PollInterval is how soon to look again while waiting on something no watch reports (see
	// waits.go: a wait that a watched change ends uses awaitWatched instead).
	PollInterval = 2 * time.Second
)

// Interval is the analysis interval (default 1m).
func Interval(spec sluicev1.CanarySpec) time.Duration {
	return sluicev1.DurationOr(spec.Analysis.Interval, DefaultInterval)
}

// Threshold is the number of failed checks that rolls a run back (default 5).
func Threshold(spec sluicev1.CanarySpec) int32 {
	return sluicev1.CountOr(spec.Analysis.Threshold, DefaultThreshold)
}

// ConsecutiveErrorLimit is the number of checks in a row that could not be judged after which
// the run rolls back (default 4).
func ConsecutiveErrorLimit(spec sluicev1.CanarySpec) int32 {
	if l := spec.Analysis.ConsecutiveErrorLimit; l != nil && *l > 0 {
		return *l
	}
	return DefaultConsecutiveErrorLimit
}

// ProgressDeadline is how long a run may go without progress (default 600 s).
func ProgressDeadline(spec sluicev1.CanarySpec) time.Duration {
	return sluicev1.SecondsOr(spec.ProgressDeadlineSeconds, DefaultProgressDeadlineSeconds*time.Second)
}

func readyThreshold(p *int32) int32 {
	if p == nil {
		return DefaultReadyThreshold
	}
	return *p
}

// PrimaryReadyThreshold is spec.analysis.primaryReadyThreshold (default 100 percent).
func PrimaryReadyThreshold(spec sluicev1.CanarySpec) int32 {
	return readyThreshold(spec.Analysis.PrimaryReadyThreshold)
}

// CanaryReadyThreshold is spec.analysis.canaryReadyThreshold (default 100 percent).
func CanaryReadyThreshold(spec sluicev1.CanarySpec) int32 {
	return readyThreshold(spec.Analysis.CanaryReadyThreshold)
}
