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
	// Spec and Status are the DataPlane's, as read at the start of the tick.
	Spec   sluicev1.DataPlaneSpec
	Status sluicev1.DataPlaneStatus
	// Namespaces are the namespaces of the data plane, sorted by name: the selected ones that are
	// not skipped, and those of the plan that still exist.
	Namespaces []Namespace
	// Skipped are selected namespaces left out, with the reason.
	Skipped []sluicev1.SkippedNamespace
	// ControlPlane is the state of the mesh's control plane.
	ControlPlane ControlPlane
	// Requests are the current values of the request annotations (sluice.dev/approve-fleet,
	// sluice.dev/abort, sluice.dev/retry); a value differing from status.lastHandledRequests is
	// a new request.
	Requests map[string]string
	// Window is the state of spec.windows at Now.
	Window windows.State
	// Check is the outcome of the analysis the controller ran this tick because AnalysisDue said
	// so; nil when none ran.
	Check *Check
	// PollInterval is how soon to look again while pods are restarting. Default DefaultPollInterval.
	PollInterval time.Duration
}

// ControlPlane is what the controller saw of the mesh's control plane.
type ControlPlane struct {
	// Version it runs ("" when none was found).
	Version string
	// Ready is true when it runs the declared version and every component the data plane needs
	// is available: a wave may start and restart pods.
	Ready bool
	// Message says what is missing when not Ready.
	Message string
	// InjectorAvailable is true when new pods get a proxy at all (Linkerd: the proxy injector is
	// available; Istio: the istiod of every revision a rollback returns to is): a rollback may
	// restart pods.
	InjectorAvailable bool
	// InjectorMessage says what is missing when not InjectorAvailable.
	InjectorMessage string
}

// Namespace is one namespace and what runs the proxy in it.
type Namespace struct {
	Name string
	// Pin is the version the namespace's new pods get, as far as the namespace decides it (see
	// mesh.Pin; an Istio revision tag resolved to its revision); "" when unset.
	Pin string
	// RevisionTag is the Istio revision tag istio.io/rev names, if it names one.
	RevisionTag string
	// Pinnable is true when the DataPlane may write the namespace's pin: Linkerd namespaces with
	// meshed pods or injection enabled; Istio namespaces that carry istio.io/rev already (a pin
	// must never turn injection on).
	Pinnable bool
	// InjectionEnabled is true when the namespace asks for injection (a namespace label).
	InjectionEnabled bool
	// Workloads are the supported workloads with at least one meshed pod or a pod that should
	// be meshed (running or being deleted), plus any the running wave restarted, sorted by kind
	// and name.
	Workloads []Workload
	// Unmanaged are running meshed pods no supported workload owns (bare pods, other
	// controllers), excluded pods left out: they cannot be restarted.
	Unmanaged []Pod
	// Unmeshed names running pods that should run the proxy and do not (not opted out, in a
	// namespace or workload that asks for injection or ran the proxy).
	Unmeshed []string
}

// Workload is one Deployment, StatefulSet, DaemonSet or Argo Rollouts Rollout.
type Workload struct {
	Kind, Name string
	// Method is how its pods are replaced.
	Method sluicev1.RestartMethod
	// RolledOut is true when its controller has caught up with its spec (mesh.RolledOut).
	RolledOut bool
	// Desired is how many pods it wants (mesh.DesiredPods). Until that many meshed pods run, a
	// replacement is still missing: the status of the workload may lag behind a deleted pod.
	Desired int32
	// Token is its restart marker: the pod-template annotation sluice.dev/restartedAt, or a
	// Rollout's spec.restartAt ("" when none).
	Token string
	// Pods are its running meshed pods (Job pods, finished pods and pods being deleted excluded),
	// sorted by name.
	Pods []Pod
	// Unmeshed are its running pods without the proxy that should have it (Version ""): they
	// need a restart like pods on another version.
	Unmeshed []Pod
	// Terminating counts its meshed pods being deleted.
	Terminating int32
	// Problem is why its controller cannot create pods (a ReplicaSet's FailedCreate), if it
	// says so.
	Problem string
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
// runs with the proxy, and every running meshed pod is ready.
func (w *Workload) settled() bool {
	if !w.RolledOut || w.Terminating > 0 || len(w.Unmeshed) > 0 || int32(len(w.Pods)) < w.Desired {
		return false
	}
	for _, p := range w.Pods {
		if !p.Ready {
			return false
		}
	}
	return true
}

// stale returns the pods of w not at version want, those without the proxy included.
func (w *Workload) stale(want string) []Pod {
	var out []Pod
	for _, p := range w.Pods {
		if p.Version != want {
			out = append(out, p)
		}
	}
	return append(out, w.Unmeshed...)
}

func (w *Workload) hasPod(uid string) bool {
	for _, p := range append(w.Pods, w.Unmeshed...) {
		if p.UID == uid {
			return true
		}
	}
	return false
}

// desired is how many meshed pods w should run: its desired replicas (surge pods never count),
// or its running meshed pods while its controller reports none.
func (w *Workload) desired() int32 {
	if w.Desired > 0 {
		return w.Desired
	}
	return int32(len(w.Pods))
}

// current is how many of w's desired pods run version v.
func (w *Workload) current(v string) int32 {
	n := int32(0)
	for _, p := range w.Pods {
		if p.Version == v {
			n++
		}
	}
	return min(n, w.desired())
}

func (o *Observed) namespace(name string) *Namespace {
	for i := range o.Namespaces {
		if o.Namespaces[i].Name == name {
			return &o.Namespaces[i]
		}
	}
	return nil
}

// pending reports whether request annotation key carries a value the controller has not acted
// on yet.
func (o *Observed) pending(key string) bool {
	v := o.Requests[key]
	return v != "" && v != o.Status.LastHandledRequests[key]
}
