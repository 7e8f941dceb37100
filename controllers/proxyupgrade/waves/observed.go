package waves

import (
	"time"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/windows"
)

// Observed is everything Decide needs, gathered by the controller in one tick.
type Observed struct {
	// Now is the time of this tick.
	Now time.Time
	// Spec and Status are the ProxyUpgrade's, as read at the start of the tick.
	Spec   sluicev1.ProxyUpgradeSpec
	Status sluicev1.ProxyUpgradeStatus
	// Namespaces are the namespaces the upgrade moves, sorted by name: the selected ones that are
	// not skipped, and those of the plan that still exist.
	Namespaces []Namespace
	// Skipped are selected namespaces left out of the upgrade, with the reason.
	Skipped []sluicev1.SkippedNamespace
	// Approved is true when the ProxyUpgrade carries sluice.dev/approve-fleet=true.
	Approved bool
	// Window is the state of spec.windows at Now.
	Window windows.State
	// Check is the outcome of the analysis the controller ran this tick because AnalysisDue said
	// so; nil when none ran.
	Check *Check
	// PollInterval is how soon to look again while pods are restarting. Default DefaultPollInterval.
	PollInterval time.Duration
}

// Namespace is one namespace and what runs the proxy in it.
type Namespace struct {
	Name string
	// Pin is the namespace's current pin (see mesh.Pin): Linkerd's config.linkerd.io/proxy-version
	// annotation or Istio's istio.io/rev label; "" when unset.
	Pin string
	// Workloads are the supported workloads with at least one meshed pod (running or being
	// deleted), plus any the running wave restarted, sorted by kind and name.
	Workloads []Workload
	// Unmanaged names running meshed pods no supported workload owns (bare pods, other
	// controllers): they are neither restarted nor counted.
	Unmanaged []string
}

// Workload is one Deployment, StatefulSet or DaemonSet.
type Workload struct {
	Kind, Name string
	// Method is how its pods are replaced.
	Method sluicev1.RestartMethod
	// RolledOut is true when its controller has caught up with its spec (mesh.RolledOut).
	RolledOut bool
	// Desired is how many pods it wants (mesh.DesiredPods). Until that many meshed pods run, a
	// replacement is still missing: the status of the workload may lag behind a deleted pod.
	Desired int32
	// Token is the value of its pod-template annotation sluice.dev/restartedAt ("" when none).
	Token string
	// Pods are its running meshed pods (Job pods, finished pods and pods being deleted excluded),
	// sorted by name.
	Pods []Pod
	// Terminating counts its meshed pods being deleted.
	Terminating int32
}

// Pod is one running meshed pod.
type Pod struct {
	Name, UID string
	// Version is the proxy version (Linkerd) or revision (Istio) it runs; "" when unknown.
	Version string
	Ready   bool
}

// Check is the outcome of one analysis of a baking wave: every metric in every namespace.
type Check struct {
	// Failed is true when any metric of any namespace failed.
	Failed bool
	// Summary names the failures, e.g. "ns-3: request-success-rate: Fail, value 80.00 …".
	Summary string
	// Results are the per-namespace, per-metric verdicts.
	Results []sluicev1.NamespaceMetricResult
}

// settled reports whether w's controller caught up, nothing is being deleted, every pod it wants
// runs, and every running meshed pod is ready.
func (w *Workload) settled() bool {
	if !w.RolledOut || w.Terminating > 0 || int32(len(w.Pods)) < w.Desired {
		return false
	}
	for _, p := range w.Pods {
		if !p.Ready {
			return false
		}
	}
	return true
}

// stale returns the pods of w not at version want.
func (w *Workload) stale(want string) []Pod {
	var out []Pod
	for _, p := range w.Pods {
		if p.Version != want {
			out = append(out, p)
		}
	}
	return out
}

func (w *Workload) hasPod(uid string) bool {
	for _, p := range w.Pods {
		if p.UID == uid {
			return true
		}
	}
	return false
}

func (o *Observed) namespace(name string) *Namespace {
	for i := range o.Namespaces {
		if o.Namespaces[i].Name == name {
			return &o.Namespaces[i]
		}
	}
	return nil
}
