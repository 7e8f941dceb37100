package waves

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/windows"
)

// world is a simulated cluster for whole-upgrade runs of Decide. Namespaces hold workloads whose
// pods the simulated injector stamps with the namespace's pin (Linkerd: else the control plane's
// default; Istio: the istio.io/rev label). A restarted workload replaces all its pods on the next
// step, which become ready one step later; an evicted pod is gone on the next step and replaced
// by a ready pod the step after.
type world struct {
	start, now time.Time
	spec       sluicev1.DataPlaneSpec
	status     sluicev1.DataPlaneStatus
	// defaultVersion is what the Linkerd injector injects without a pin (the control plane's).
	defaultVersion string
	namespaces     []*simNamespace
	// analysis answers a check of one namespace of wave i.
	analysis func(w *world, wave int, ns string) (failed bool, summary string)
	window   func(now time.Time) windows.State
	// requests are the DataPlane's request annotations (approve-fleet, abort, retry).
	requests map[string]string
	// cp is the control plane as the controller sees it.
	cp ControlPlane
	// injectorDown makes new pods come up without the proxy (failurePolicy Ignore).
	injectorDown bool
	// evictionBlocked refuses evictions while it returns true (a PodDisruptionBudget).
	evictionBlocked func(w *world, a Action) bool
	// loseStatusOnce drops the status write of the first tick that restarted something, as a
	// controller that dies between its actions and its status patch would.
	loseStatusOnce bool

	uid           int
	log           []string
	notifications []Notification
	// restarts counts template restarts per workload and direction token; evictions per pod UID.
	restarts  map[string]int
	evictions map[string]int
	// firstTouched is when a namespace's first pod was replaced.
	firstTouched map[string]time.Duration
}

type simNamespace struct {
	name, pin string
	workloads []*simWorkload
	// unmanaged pods (no controller) cannot be restarted.
	unmanaged []Pod
}

type simWorkload struct {
	kind, name string
	method     sluicev1.RestartMethod
	replicas   int
	token      string
	// templatePin pins the version in the pod template (overrides the namespace's).
	templatePin string
	pods        []*simPod
	rollout     bool // a restart is pending: replace every pod on the next step
	terminating int
}

type simPod struct {
	name, uid, version string
	ready              bool
	unmeshed           bool
	evicted            bool
	gone               bool
}

const (
	oldVersion = "edge-26.6.3"
	newVersion = "edge-26.8.3"
)

func newWorld(spec sluicev1.DataPlaneSpec) *world {
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	return &world{start: start, now: start, spec: spec, defaultVersion: oldVersion,
		analysis: func(*world, int, string) (bool, string) { return false, "" },
		window:   func(time.Time) windows.State { return windows.State{Open: true} },
		requests: map[string]string{},
		cp:       ControlPlane{Version: spec.Version + spec.Revision, Ready: true, InjectorAvailable: true},
		restarts: map[string]int{}, evictions: map[string]int{}, firstTouched: map[string]time.Duration{}}
}

// fleet adds n namespaces ns-1..ns-n, each with a Deployment (2 replicas), an OnDelete
// StatefulSet (2) and a rolling DaemonSet (2 nodes), all on version.
func (w *world) fleet(n int, version string) {
	for i := 1; i <= n; i++ {
		ns := &simNamespace{name: fmt.Sprintf("ns-%d", i)}
		ns.workloads = []*simWorkload{
			{kind: "DaemonSet", name: "agent", method: sluicev1.RestartRollout, replicas: 2},
			{kind: "Deployment", name: "web", method: sluicev1.RestartRollout, replicas: 2},
			{kind: "StatefulSet", name: "db", method: sluicev1.RestartEvict, replicas: 2},
		}
		for _, wl := range ns.workloads {
			for r := 0; r < wl.replicas; r++ {
				wl.pods = append(wl.pods, w.newPod(wl, r, version, true))
			}
		}
		w.namespaces = append(w.namespaces, ns)
	}
}

func (w *world) newPod(wl *simWorkload, ordinal int, version string, ready bool) *simPod {
	w.uid++
	if version == "" {
		return &simPod{name: fmt.Sprintf("%s-%d-%d", wl.name, w.uid, ordinal), uid: fmt.Sprintf("uid-%d", w.uid), ready: ready, unmeshed: true}
	}
	name := fmt.Sprintf("%s-%d", wl.name, ordinal)
	if wl.kind != "StatefulSet" {
		name = fmt.Sprintf("%s-%d-%d", wl.name, w.uid, ordinal)
	}
	return &simPod{name: name, uid: fmt.Sprintf("uid-%d", w.uid), version: version, ready: ready}
}

// inject is the version the injector gives a new pod of wl in ns.
func (w *world) inject(ns *simNamespace, wl *simWorkload) string {
	if w.injectorDown {
		return ""
	}
	if wl.templatePin != "" {
		return wl.templatePin
	}
	if ns.pin != "" {
		return ns.pin
	}
	if w.spec.Mesh == sluicev1.MeshIstio {
		return "default"
	}
	return w.defaultVersion
}

// step plays the workload controllers and the injector for one tick.
func (w *world) step() {
	for _, ns := range w.namespaces {
		for _, wl := range ns.workloads {
			for _, p := range wl.pods {
				p.ready = true
			}
			if wl.terminating > 0 {
				// The StatefulSet (or DaemonSet) controller recreates an evicted pod one step after
				// it is gone.
				wl.terminating = 0
				for i, p := range wl.pods {
					if p.evicted && !p.gone {
						p.gone = true
						wl.terminating++
						continue
					}
					if p.evicted {
						np := w.newPod(wl, i, w.inject(ns, wl), false)
						np.name = p.name
						wl.pods[i] = np
					}
				}
			}
			if wl.rollout {
				wl.rollout = false
				for i := range wl.pods {
					wl.pods[i] = w.newPod(wl, i, w.inject(ns, wl), false)
				}
				w.touched(ns.name)
			}
		}
	}
}

func (w *world) touched(ns string) {
	if _, ok := w.firstTouched[ns]; !ok {
		w.firstTouched[ns] = w.now.Sub(w.start)
	}
}

func (w *world) observe() Observed {
	o := Observed{Now: w.now, Spec: w.spec, Status: w.status, Requests: w.requests, Window: w.window(w.now),
		ControlPlane: w.cp, PollInterval: 2 * time.Second}
	for _, ns := range w.namespaces {
		n := Namespace{Name: ns.name, Pin: ns.pin, Unmanaged: ns.unmanaged, Pinnable: true, InjectionEnabled: true}
		for _, wl := range ns.workloads {
			// An evicted pod is gone at once, and the workload's status does not show it yet: only
			// the missing pod tells that a replacement is due.
			ow := Workload{Kind: wl.kind, Name: wl.name, Method: wl.method, Token: wl.token, RolledOut: !wl.rollout,
				Desired: int32(wl.replicas)}
			for _, p := range wl.pods {
				if p.evicted {
					continue
				}
				if p.unmeshed {
					ow.Unmeshed = append(ow.Unmeshed, Pod{Name: p.name, UID: p.uid, Ready: p.ready})
					n.Unmeshed = append(n.Unmeshed, p.name)
					continue
				}
				ow.Pods = append(ow.Pods, Pod{Name: p.name, UID: p.uid, Version: p.version, Ready: p.ready})
			}
			sort.Slice(ow.Pods, func(i, j int) bool { return ow.Pods[i].Name < ow.Pods[j].Name })
			n.Workloads = append(n.Workloads, ow)
		}
		o.Namespaces = append(o.Namespaces, n)
	}
	return o
}

func (w *world) namespace(name string) *simNamespace {
	for _, ns := range w.namespaces {
		if ns.name == name {
			return ns
		}
	}
	return nil
}

func (w *world) workload(ns *simNamespace, kind, name string) *simWorkload {
	for _, wl := range ns.workloads {
		if wl.kind == kind && wl.name == name {
			return wl
		}
	}
	return nil
}

// tick runs one reconcile: the analysis when due, Decide, the actions, Record and Finish.
func (w *world) tick(t *testing.T) Decision {
	t.Helper()
	o := w.observe()
	if AnalysisDue(o) {
		i, _ := activeWave(&o.Status)
		c := Check{}
		var failures []string
		for _, ns := range BakingWave(&o.Status) {
			failed, summary := w.analysis(w, i, ns)
			verdict := sluicev1.VerdictPass
			if failed {
				verdict = sluicev1.VerdictFail
				failures = append(failures, ns+": "+summary)
			}
			c.Results = append(c.Results, sluicev1.NamespaceMetricResult{Namespace: ns,
				MetricResult: sluicev1.MetricResult{Name: "request-success-rate", Verdict: verdict}})
		}
		c.Failed, c.Summary = len(failures) > 0, strings.Join(failures, "; ")
		o.Check = &c
	}
	d := Decide(o)
	restarted := false
	for _, a := range d.Actions {
		d.Record(a, w.apply(t, a))
		restarted = restarted || a.Type == ActionRestart
	}
	d.Finish(w.now)
	w.record(o.Status, d)
	w.notifications = append(w.notifications, d.Notifications...)
	if w.loseStatusOnce && restarted {
		w.loseStatusOnce = false
		w.log = append(w.log, "        (the controller stops before writing this status; a new one starts from the last status)")
	} else {
		w.status = d.Status
	}
	after := d.RequeueAfter
	if after <= 0 || after > time.Hour {
		after = time.Hour
	}
	w.now = w.now.Add(after)
	w.step()
	return d
}

func (w *world) apply(t *testing.T, a Action) error {
	t.Helper()
	ns := w.namespace(a.Namespace)
	switch a.Type {
	case ActionPin:
		ns.pin = a.Value
	case ActionRestart:
		wl := w.workload(ns, a.Kind, a.Name)
		if wl.token != a.Value {
			wl.token = a.Value
			wl.rollout = true
			w.restarts[a.Namespace+"/"+a.Kind+"/"+a.Name+"@"+a.Value]++
		}
	case ActionEvict:
		if w.evictionBlocked != nil && w.evictionBlocked(w, a) {
			return fmt.Errorf("%w: evicting pod %s/%s: Cannot evict pod as it would violate the pod's disruption budget", ErrBlocked, a.Namespace, a.Pod)
		}
		wl := w.workload(ns, a.Kind, a.Name)
		for _, p := range wl.pods {
			if p.evicted || !p.ready {
				t.Fatalf("evicting %s while pod %s of %s %s is not back yet", a.Pod, p.name, a.Kind, a.Name)
			}
		}
		for _, p := range wl.pods {
			if p.uid == a.UID && !p.evicted {
				p.evicted = true
				wl.terminating++
				w.evictions[p.uid]++
				w.touched(ns.name)
				return nil
			}
		}
		t.Fatalf("evicted pod %s (%s) that is not running", a.Pod, a.UID)
	}
	return nil
}

func (w *world) record(before sluicev1.DataPlaneStatus, d Decision) {
	s := d.Status
	waves := ""
	for _, wv := range s.Waves {
		waves += waveLetter[wv.Phase]
	}
	changed := before.Phase != s.Phase || before.Desired != s.Desired || before.Current != s.Current || before.CurrentWave != s.CurrentWave ||
		len(d.Events) > 0 || len(d.Actions) > 0
	for i := range s.Waves {
		if i >= len(before.Waves) || before.Waves[i].Phase != s.Waves[i].Phase {
			changed = true
		}
	}
	if !changed {
		return
	}
	line := fmt.Sprintf("%8s  %-11s wave=%d [%s] pods %2d/%-2d", w.now.Sub(w.start), s.Phase, s.CurrentWave, waves, s.Current, s.Desired)
	for _, e := range d.Events {
		line += fmt.Sprintf("\n           [%s] %s", e.Reason, e.Message)
	}
	for _, a := range d.Actions {
		line += "\n             - " + a.String()
	}
	if d.Hold != nil {
		line += "\n           hold: " + d.Hold.Message
	}
	if s.LastUpdateAttemptResult == sluicev1.UpdateAttemptBlocked && before.LastUpdateAttemptMessage != s.LastUpdateAttemptMessage {
		line += "\n           blocked: " + s.LastUpdateAttemptMessage
	}
	w.log = append(w.log, line)
}

// runUntil ticks until the upgrade reaches one of want, or fails after max ticks.
func (w *world) runUntil(t *testing.T, max int, want ...sluicev1.DataPlanePhase) {
	t.Helper()
	for i := 0; i < max; i++ {
		w.tick(t)
		if slices.Contains(want, w.status.Phase) {
			return
		}
	}
	t.Fatalf("phase %s after %d ticks, want one of %v\n%s", w.status.Phase, max, want, strings.Join(w.log, "\n"))
}

// versions returns the versions running in namespace ns, sorted, e.g. "edge-26.8.3 x6".
func (w *world) versions(ns string) string {
	counts := map[string]int{}
	for _, wl := range w.namespace(ns).workloads {
		for _, p := range wl.pods {
			if p.unmeshed {
				counts["no proxy"]++
				continue
			}
			counts[p.version]++
		}
	}
	var out []string
	for v, n := range counts {
		out = append(out, fmt.Sprintf("%s x%d", v, n))
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// assertRestartedAtMostOnce fails when a workload was restarted twice with one token, or a pod
// evicted twice.
func (w *world) assertRestartedAtMostOnce(t *testing.T) {
	t.Helper()
	for k, n := range w.restarts {
		if n > 1 {
			t.Errorf("%s restarted %d times", k, n)
		}
	}
	for k, n := range w.evictions {
		if n > 1 {
			t.Errorf("pod %s evicted %d times", k, n)
		}
	}
}

// waveLetter abbreviates wave phases in the log: "SB--" is a succeeded wave, a baking one and two
// pending ones.
var waveLetter = map[sluicev1.WavePhase]string{
	sluicev1.WavePending: "-", sluicev1.WaveRestarting: "R", sluicev1.WaveBaking: "B", sluicev1.WaveSucceeded: "S",
	sluicev1.WaveRollingBack: "r", sluicev1.WaveRolledBack: "X", sluicev1.WaveFailed: "F",
}
