package plan

import (
	"time"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// Observed is everything Decide needs, gathered by the controller in one tick.
type Observed struct {
	// Now is the time of this tick.
	Now time.Time
	// Spec and Status are the Canary's, as read at the start of the tick.
	Spec   sluicev1.CanarySpec
	Status sluicev1.CanaryStatus
	// Revision is the target's current revision: a hash of its pod template and tracked configs.
	Revision string
	// TrackedConfigs are the checksums Revision was computed from ("configmap/NAME" → sum).
	TrackedConfigs map[string]string
	// Primary and Canary describe the <target>-primary Deployment and the target itself.
	Primary, Canary Workload
	// RouteWeight is the canary weight in percent read back from the route object this tick;
	// RouteKnown is false when the route could not be read (e.g. not created yet).
	RouteWeight int32
	RouteKnown  bool
	// RouteABOn says whether the route holds A/B rules (providers.Router.GetABRoutes), read this
	// tick; RouteABKnown is false when it could not be read. Decide puts the A/B routing back when
	// it differs from what the status says it should be.
	RouteABOn    bool
	RouteABKnown bool
	// RouteMirror (percent mirrored to the canary, 0: none) and RouteCookie (the session-affinity
	// cookie, "": none) are read from the route this tick (providers.Router.GetMirror,
	// GetSessionAffinity); RouteExtrasKnown is false when they could not be read. Decide puts them
	// back when they differ from what the status asks for (MirrorWanted, AffinityCookie).
	RouteMirror      int32
	RouteCookie      string
	RouteExtrasKnown bool
	// Check is the outcome of the analysis the controller ran this tick because AnalysisDue said
	// so; nil when no analysis ran.
	Check *Check
	// Requests are the Canary's request annotations (sluicev1.AnnotationPromote, …) and their
	// values; a value differing from Status.LastHandledRequests is a new request.
	Requests map[string]string
	// Gates holds the outcome of every gate GatesDue asked for this tick; a gate whose call has not
	// answered yet is Pending (gates.go).
	Gates map[sluicev1.WebhookType]GateResult
	// Hold, when set, keeps a new run from starting and a running one from advancing a step
	// (progression window closed, cap on simultaneous rollouts reached). Checks keep running
	// while traffic is on the canary.
	Hold *Hold
	// Stall, when set, is a problem only a change to the spec or the cluster fixes (a missing
	// ConfigMap, an invalid interval, a route error). It holds every advance like a Hold, but
	// passing checks are no progress: with traffic on the canary the run rolls back at the
	// progress deadline, with the stall's reason in the message.
	Stall *Hold
	// PrimaryCreated is true when the controller created the primary this tick (at first, or
	// rebuilt from a target back on the promoted revision): the lifecycle starts over at
	// Initializing.
	PrimaryCreated bool
	// PrimaryWaitingOn, while initializing with an unready primary, is what it waits on, as its
	// Deployment and pods say (a ReplicaSet's FailedCreate, ImagePullBackOff, Unschedulable); ""
	// when nothing names it.
	PrimaryWaitingOn string
	// MetricsWait, when set, keeps an initializing Canary waiting for its metrics server.
	MetricsWait *Hold
	// Answers are the gate webhook answers the controller received this tick, and the calls still
	// pending (WebhookStatus.Pending); Decide records them in status.webhooks so a restarted
	// controller never asks the same round again.
	Answers []sluicev1.WebhookStatus
	// PrimaryEndpoints are the primary Service's endpoints as its EndpointSlices list them, read
	// around the cache only for a tick whose decision sends all traffic back to the primary
	// (ReturnsAllTraffic: the controller then decides again with them); nil when not read. The data plane routes by them, and the EndpointSlice
	// controller follows the pods with a lag: a pod the Deployment already counts ready may not
	// be a ready endpoint yet, and a pod of the old revision may still be one.
	PrimaryEndpoints *Endpoints
}

// Endpoints counts a Service's endpoints, each pod once (dual-stack Services list it in two
// EndpointSlices): Ready the ready ones, Serving every one that is not terminating.
// OtherRevision counts the serving ones whose pod is not of the primary's current ReplicaSet,
// when the primary's Deployment names it (0 when it does not): pods of the revision the primary
// rolled away from, which an EndpointSlice — or a cache of it — lagging the rollout still lists.
//
// Watched is true when every slice read carries the primary Service's role label: the controller
// watches those slices, and a change of one wakes the Canary waiting on them.
type Endpoints struct {
	Ready, Serving int32
	OtherRevision  int32
	Watched        bool
}

// Workload is the observed state of a Deployment.
type Workload struct {
	// Exists is false when the Deployment is missing.
	Exists bool
	// Revision is the revision the workload runs (primary: its sluice.dev/revision annotation).
	Revision string
	// Desired is spec.replicas; Ready and Updated are status.readyReplicas and updatedReplicas.
	Desired, Ready, Updated int32
	// ReadyNotAvailable counts the ready replicas not available yet (ready for less than the
	// Deployment's minReadySeconds: readyReplicas - availableReplicas).
	ReadyNotAvailable int32
	// RolledOut is true when the Deployment controller has observed the latest generation and
	// every replica runs the current template.
	RolledOut bool
}

// ReadyPercent is the percentage (0–100) of desired replicas that are ready; 0 when none are
// desired.
func (w Workload) ReadyPercent() int32 {
	return w.percentOfDesired(w.Ready)
}

// percentOfDesired is n as a percentage (0–100) of the desired replicas; 0 when none are desired.
func (w Workload) percentOfDesired(n int32) int32 {
	if w.Desired <= 0 {
		return 0
	}
	p := n * 100 / w.Desired
	if p > 100 {
		p = 100
	}
	return p
}

// IsReady reports whether the workload runs its current template with at least threshold percent
// (0–100) of its desired replicas ready and available, and at least one: a backend with zero
// ready endpoints never counts as ready.
func (w Workload) IsReady(threshold int32) bool {
	return w.Exists && w.RolledOut && w.Available() > 0 && w.percentOfDesired(w.Available()) >= threshold
}

// Available is the ready replicas that are also available (ready for minReadySeconds), which
// is what IsReady counts, as Flagger's readiness check and the Deployment controller's rollout
// do.
func (w Workload) Available() int32 {
	return max(w.Ready-w.ReadyNotAvailable, 0)
}

// Check is the outcome of one analysis run.
type Check struct {
	// Outcome applies the evidence rule (analysis.Check.Outcome). Empty: derived from Failed and
	// Results (Failed; else Error, Passed or NoEvidence by the verdicts).
	Outcome sluicev1.CheckOutcome
	// Failed is true when the check counts as a failed check.
	Failed bool
	// Summary names what decided the outcome (failing, erroring or skipped metrics); empty when
	// the check passed.
	Summary string
	// Results are the per-metric verdicts, recorded in status.
	Results []sluicev1.MetricResult
	// WindowStart is the start of the longest metric window the check judged.
	WindowStart time.Time
}

// outcome returns c.Outcome, or derives it from Failed and the verdicts.
func (c Check) outcome() sluicev1.CheckOutcome {
	if c.Outcome != "" {
		return c.Outcome
	}
	if c.Failed {
		return sluicev1.CheckFailed
	}
	out := sluicev1.CheckNoEvidence
	for _, r := range c.Results {
		switch r.Verdict {
		case sluicev1.VerdictFail, sluicev1.VerdictNoData:
			return sluicev1.CheckFailed
		case sluicev1.VerdictError:
			out = sluicev1.CheckError
		case sluicev1.VerdictPass:
			if out == sluicev1.CheckNoEvidence {
				out = sluicev1.CheckPassed
			}
		}
	}
	return out
}

// Hold is a reason a run may not start or advance now.
type Hold struct {
	// Reason is a condition reason, e.g. sluicev1.ReasonOutsideWindow.
	Reason string
	// Message says why and until when, e.g. "outside progression windows; next opens at …".
	Message string
	// Until is when to look again; zero means one interval.
	Until time.Time
	// Deliberate marks an operator's pause (spec.suspend with traffic on the canary): it holds
	// only the advance. Checks keep running every interval and the failed-check threshold and
	// consecutive-error limit still roll a failing canary back, but the progress deadline waits
	// (a deliberate hold is not a stuck run): it counts again from the last check once resumed.
	// A stall during the pause keeps its deadline.
	Deliberate bool
}

// PausedWithTraffic reports whether an operator's pause (spec.suspend) must keep the run's checks
// going: a run in Progressing or WaitingPromotion with traffic on the canary. Elsewhere a pause
// freezes everything (no traffic on the canary, or a promotion in flight).
func PausedWithTraffic(spec sluicev1.CanarySpec, s sluicev1.CanaryStatus) bool {
	if !spec.Suspend {
		return false
	}
	switch s.Phase {
	case sluicev1.CanaryPhaseProgressing, sluicev1.CanaryPhaseWaitingPromotion:
		return trafficOn(spec, s)
	}
	return false
}

// pausedByOperator reports whether the run is held by an operator's pause and nothing else
// stalls it: the progress deadline waits.
func pausedByOperator(o Observed) bool {
	return o.Hold != nil && o.Hold.Deliberate && o.Stall == nil
}

// GateResult is the outcome of all webhooks of one gate type: Passed only when every one passed,
// Pending while none refused and a call has not answered yet (gates.go: a pending gate holds only
// what it gates).
type GateResult struct {
	Passed  bool
	Pending bool
	// Muted: every webhook that did not pass has webhooks[].muteAlert, so waiting at the gate (or
	// a failed pre-rollout check) sends no alert, as in Flagger; the event is still recorded.
	Muted bool
	// Message names the webhooks that did not pass and why (status code, timeout, no approval,
	// no answer yet).
	Message string
}
