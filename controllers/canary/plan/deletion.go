package plan

import (
	"fmt"
	"time"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// The deletion sub-machine. A deleted Canary (metadata.deletionTimestamp set, the finalizer still
// on it) leaves the lifecycle of Decide for two phases of its own, decided by DecideDeletion:
//
//	any phase ──delete──▶ Terminating ──traffic safe without the Canary──▶ Terminated (finalizer released)
//
// Without spec.revertOnDeletion the primary objects are orphaned and keep serving as they are
// (ActionOrphanObjects). With it the target is scaled back up, and once it is ready the apex
// Service and the route point at it again (ActionRestoreRouting) before the primary objects go
// (ActionRemovePrimaryObjects). A target that is gone leaves nothing to restore. Every action is
// idempotent, so a tick that fails half-way is simply decided again.

// Actions of the deletion sub-machine (besides ActionScaleCanaryUp, which scales the target back
// to the primary's replicas).
const (
	// ActionOrphanObjects drops the Canary's owner reference from every object it controls that
	// carries traffic, so garbage collection does not delete them.
	ActionOrphanObjects Action = "OrphanObjects"
	// ActionRestoreRouting points the apex Service's selector at the target's pods and restores
	// the user's routing (providers.Router.Finalize).
	ActionRestoreRouting Action = "RestoreRouting"
	// ActionRemovePrimaryObjects deletes the primary Deployment, the -primary and -canary Services
	// and the -primary config copies.
	ActionRemovePrimaryObjects Action = "RemovePrimaryObjects"
	// ActionReleaseFinalizer removes the finalizer: the Canary goes.
	ActionReleaseFinalizer Action = "ReleaseFinalizer"
)

// EventTargetGone is the warning of a deletion that finds the target gone.
const EventTargetGone = sluicev1.ReasonTargetNotFound

// DeletionObserved is what DecideDeletion needs.
type DeletionObserved struct {
	// Now is the time of this tick.
	Now time.Time
	// Spec and Status are the Canary's.
	Spec   sluicev1.CanarySpec
	Status sluicev1.CanaryStatus
	// Target is the target Deployment; Exists is false when it is gone.
	Target Workload
}

// DecideDeletion returns the next step of a deleted Canary.
func DecideDeletion(o DeletionObserved) Decision {
	d := Decision{Status: *o.Status.DeepCopy(), RequeueAfter: PollInterval}
	if p := o.Status.Phase; p != sluicev1.CanaryPhaseTerminating && p != sluicev1.CanaryPhaseTerminated {
		d.setPhase(sluicev1.CanaryPhaseTerminating, o.Now)
		d.normal(sluicev1.ReasonTerminating, "Deleting: restoring the target before removing the primary")
	}
	switch {
	case !o.Spec.RevertOnDeletion:
		d.do(ActionOrphanObjects, ActionReleaseFinalizer)
		d.normal(sluicev1.ReasonTerminating, "Deleted without revertOnDeletion: the primary, its Services and routes are left "+
			"serving as they are (no longer owned by the Canary)")
	case !o.Target.Exists:
		d.warning(EventTargetGone, "Target is gone; nothing to restore")
		d.do(ActionRemovePrimaryObjects, ActionReleaseFinalizer)
	case o.Target.Desired == 0:
		d.do(ActionScaleCanaryUp)
		return d
	case !o.Target.IsReady(CanaryReadyThreshold(o.Spec)):
		d.Hold = &Hold{Reason: sluicev1.ReasonTerminating,
			Message: fmt.Sprintf("Waiting for %s to become ready before removing the primary (%d of %d pods ready)",
				o.Spec.TargetRef.Name, o.Target.Ready, o.Target.Desired)}
		return d
	default:
		d.do(ActionRestoreRouting, ActionRemovePrimaryObjects, ActionReleaseFinalizer)
	}
	d.setPhase(sluicev1.CanaryPhaseTerminated, o.Now)
	d.RequeueAfter = 0
	return d
}
