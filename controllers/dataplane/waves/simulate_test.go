package waves

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/windows"
	"sluice.dev/sluice/test/golden"
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
	approved bool
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
	// unmanaged pods (no controller) and job pods are what the controller leaves out.
	unmanaged []string
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
	name := fmt.Sprintf("%s-%d", wl.name, ordinal)
	if wl.kind != "StatefulSet" {
		name = fmt.Sprintf("%s-%d-%d", wl.name, w.uid, ordinal)
	}
	return &simPod{name: name, uid: fmt.Sprintf("uid-%d", w.uid), version: version, ready: ready}
}

// inject is the version the injector gives a new pod of wl in ns.
func (w *world) inject(ns *simNamespace, wl *simWorkload) string {
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
	o := Observed{Now: w.now, Spec: w.spec, Status: w.status, Approved: w.approved, Window: w.window(w.now), PollInterval: 2 * time.Second}
	for _, ns := range w.namespaces {
		n := Namespace{Name: ns.name, Pin: ns.pin, Unmanaged: ns.unmanaged}
		for _, wl := range ns.workloads {
			// An evicted pod is gone at once, and the workload's status does not show it yet: only
			// the missing pod tells that a replacement is due.
			ow := Workload{Kind: wl.kind, Name: wl.name, Method: wl.method, Token: wl.token, RolledOut: !wl.rollout,
				Desired: int32(wl.replicas)}
			for _, p := range wl.pods {
				if p.evicted {
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
	if i, ok := activeWave(&s); ok && s.Waves[i].LastUpdateAttemptResult == sluicev1.UpdateAttemptBlocked &&
		(i >= len(before.Waves) || before.Waves[i].LastUpdateAttemptMessage != s.Waves[i].LastUpdateAttemptMessage) {
		line += "\n           blocked: " + s.Waves[i].LastUpdateAttemptMessage
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
	sluicev1.WaveRollingBack: "r", sluicev1.WaveRolledBack: "X",
}

// fleetSpec is the acceptance fleet: Linkerd edge-26.6.3 → edge-26.8.3, canary ns-1,
// waves of 2, two workloads restarting at once, a 5m bake checked every minute.
func fleetSpec() sluicev1.DataPlaneSpec {
	return sluicev1.DataPlaneSpec{
		Mesh:             sluicev1.MeshLinkerd,
		Linkerd:          &sluicev1.LinkerdDataPlane{ProxyVersion: newVersion},
		CanaryNamespaces: []string{"ns-1"},
		Waves:            sluicev1.DataPlaneWaves{MaxNamespaces: ptr.To[int32](2)},
		BakeTime:         "5m",
		MaxUnavailable:   ptr.To[int32](2),
		Analysis: sluicev1.DataPlaneAnalysis{Interval: "1m", Threshold: 2, Metrics: []sluicev1.CanaryMetric{
			{Name: sluicev1.MetricRequestSuccessRate, ThresholdRange: &sluicev1.ThresholdRange{Min: ptr.To(99.0)}}}},
	}
}

func TestGoldenLinkerdFleetSucceeds(t *testing.T) {
	w := newWorld(fleetSpec())
	w.fleet(6, oldVersion)
	w.defaultVersion = newVersion // the control plane was upgraded first
	w.runUntil(t, 300, sluicev1.DataPlaneUpToDate)

	for _, ns := range w.namespaces {
		if v := w.versions(ns.name); v != newVersion+" x6" {
			t.Errorf("%s runs %s", ns.name, v)
		}
	}
	if w.status.Desired != 36 || w.status.Current != 36 {
		t.Errorf("desired %d current %d, want 36/36", w.status.Desired, w.status.Current)
	}
	// The canary namespace baked before any other namespace was touched.
	canaryDone := w.status.Waves[0].CompletedAt.Sub(w.start)
	for ns, at := range w.firstTouched {
		if ns != "ns-1" && at < canaryDone {
			t.Errorf("%s restarted at %s, before the canary wave completed at %s", ns, at, canaryDone)
		}
	}
	if bake := w.status.Waves[0].CompletedAt.Sub(w.status.Waves[0].BakeStartedAt.Time); bake < 5*time.Minute {
		t.Errorf("canary wave baked %s", bake)
	}
	w.assertRestartedAtMostOnce(t)
	if len(w.notifications) != 1 || w.notifications[0].Event != "Succeeded" {
		t.Errorf("notifications %+v", w.notifications)
	}
	// Succeeded is stable and quiet.
	for i := 0; i < 3; i++ {
		if d := w.tick(t); len(d.Actions)+len(d.Events)+len(d.Notifications) != 0 {
			t.Fatalf("succeeded upgrade acted: %+v", d)
		}
	}
	golden.Assert(t, "linkerd-fleet-succeeds", w.log)
}

func TestGoldenSecondWaveFailsAndRollsBack(t *testing.T) {
	w := newWorld(fleetSpec())
	w.fleet(6, oldVersion)
	w.defaultVersion = newVersion
	w.analysis = func(w *world, wave int, ns string) (bool, string) {
		if wave == 1 && ns == "ns-3" {
			return true, "request-success-rate: Fail, value 80.00 outside [99, +Inf]"
		}
		return false, ""
	}
	w.runUntil(t, 300, sluicev1.DataPlaneRolledBack)
	for _, ns := range []string{"ns-2", "ns-3", "ns-4", "ns-5", "ns-6"} {
		if v := w.versions(ns); v != oldVersion+" x6" {
			t.Errorf("%s runs %s, want %s everywhere", ns, v, oldVersion)
		}
		if pin := w.namespace(ns).pin; pin != oldVersion {
			t.Errorf("%s pinned to %q", ns, pin)
		}
	}
	if v := w.versions("ns-1"); v != newVersion+" x6" {
		t.Errorf("canary ns-1 runs %s", v)
	}
	for _, ns := range []string{"ns-4", "ns-5", "ns-6"} {
		if _, ok := w.firstTouched[ns]; ok {
			t.Errorf("%s was touched: a later wave started", ns)
		}
	}
	phases := []sluicev1.WavePhase{}
	for _, wv := range w.status.Waves {
		phases = append(phases, wv.Phase)
	}
	if fmt.Sprint(phases) != "[Succeeded RolledBack Pending Pending]" {
		t.Errorf("wave phases %v", phases)
	}
	w.assertRestartedAtMostOnce(t)
	if len(w.notifications) != 1 || w.notifications[0].Event != "Failed" {
		t.Errorf("notifications %+v, want one Failed", w.notifications)
	}
	for i := 0; i < 3; i++ {
		if d := w.tick(t); len(d.Actions)+len(d.Events)+len(d.Notifications) != 0 {
			t.Fatalf("failed upgrade acted: %+v", d)
		}
	}
	golden.Assert(t, "second-wave-fails", w.log)
}

func TestGoldenWindowHoldsWaves(t *testing.T) {
	spec := fleetSpec()
	spec.Analysis.Metrics = nil
	spec.BakeTime = "30m" // the canary wave bakes past the end of the window
	w := newWorld(spec)
	w.fleet(3, oldVersion)
	w.defaultVersion = newVersion
	// Open 13:00–13:30 every day.
	opens := func(now time.Time) windows.State {
		st, err := windows.Evaluate([]sluicev1.ProgressionWindow{{Schedule: "0 13 * * *", Duration: "30m"}}, now)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	w.window = opens
	d := w.tick(t)
	if w.status.Phase != sluicev1.DataPlaneWaiting || d.Hold == nil ||
		d.Hold.Message != "Wave 0 waits outside the upgrade windows; the next window opens at 2026-11-30T13:00:00Z" {
		t.Fatalf("phase %s, hold %+v", w.status.Phase, d.Hold)
	}
	for _, a := range d.Actions {
		if a.Type != ActionPin || a.Value != oldVersion {
			t.Fatalf("outside the window: %s", a)
		}
	}
	w.runUntil(t, 300, sluicev1.DataPlaneUpToDate)
	for i, wv := range w.status.Waves {
		st := opens(wv.StartedAt.Time)
		if !st.Open {
			t.Errorf("wave %d started at %s, outside the window", i, wv.StartedAt.Time)
		}
	}
	golden.Assert(t, "window-holds-waves", w.log)
}

func TestGoldenApprovalHoldsFleet(t *testing.T) {
	spec := fleetSpec()
	spec.Analysis.Metrics = nil
	spec.BakeTime = "1m"
	spec.RequireApproval = true
	w := newWorld(spec)
	w.fleet(3, oldVersion)
	w.defaultVersion = newVersion
	w.runUntil(t, 100, sluicev1.DataPlaneWaiting)
	for i := 0; i < 3; i++ {
		w.tick(t)
	}
	if w.status.Phase != sluicev1.DataPlaneWaiting || w.status.Waves[0].Phase != sluicev1.WaveSucceeded ||
		w.status.Waves[1].Phase != sluicev1.WavePending {
		t.Fatalf("phase %s, waves %v %v", w.status.Phase, w.status.Waves[0].Phase, w.status.Waves[1].Phase)
	}
	w.log = append(w.log, "        (sluice.dev/approve-fleet=true)")
	w.approved = true
	w.runUntil(t, 100, sluicev1.DataPlaneUpToDate)
	golden.Assert(t, "approval-holds-fleet", w.log)
}

func TestGoldenIstioRelabelAndRollBack(t *testing.T) {
	spec := sluicev1.DataPlaneSpec{
		Mesh:             sluicev1.MeshIstio,
		Istio:            &sluicev1.IstioDataPlane{Revision: "1-27-1", PreviousRevision: "1-26-0"},
		CanaryNamespaces: []string{"ns-1"},
		BakeTime:         "2m",
		MaxUnavailable:   ptr.To[int32](3),
		Analysis: sluicev1.DataPlaneAnalysis{Interval: "1m", Threshold: 1, Metrics: []sluicev1.CanaryMetric{
			{Name: sluicev1.MetricRequestSuccessRate, ThresholdRange: &sluicev1.ThresholdRange{Min: ptr.To(99.0)}}}},
	}
	w := newWorld(spec)
	w.fleet(3, "1-26-0")
	for _, ns := range w.namespaces {
		ns.pin = "1-26-0"
	}
	w.analysis = func(w *world, wave int, ns string) (bool, string) {
		return ns == "ns-3", "request-success-rate: Fail, value 90.00 outside [99, +Inf]"
	}
	w.runUntil(t, 300, sluicev1.DataPlaneRolledBack)
	want := map[string]string{"ns-1": "1-27-1", "ns-2": "1-27-1", "ns-3": "1-26-0"}
	for ns, rev := range want {
		if got := w.namespace(ns).pin; got != rev {
			t.Errorf("%s labelled istio.io/rev=%s, want %s", ns, got, rev)
		}
		if v := w.versions(ns); v != rev+" x6" {
			t.Errorf("%s runs %s", ns, v)
		}
	}
	w.assertRestartedAtMostOnce(t)
	golden.Assert(t, "istio-relabel-and-rollback", w.log)
}

func TestGoldenLostStatusWriteRestartsNothingTwice(t *testing.T) {
	spec := fleetSpec()
	spec.Analysis.Metrics = nil
	spec.MaxUnavailable = ptr.To[int32](3)
	w := newWorld(spec)
	w.fleet(2, oldVersion)
	w.defaultVersion = newVersion
	w.loseStatusOnce = true
	w.runUntil(t, 200, sluicev1.DataPlaneUpToDate)
	w.assertRestartedAtMostOnce(t)
	for _, ns := range w.namespaces {
		if v := w.versions(ns.name); v != newVersion+" x6" {
			t.Errorf("%s runs %s", ns.name, v)
		}
	}
	golden.Assert(t, "lost-status-write", w.log)
}

func TestGoldenPodDisruptionBudgetBlocksEviction(t *testing.T) {
	spec := fleetSpec()
	spec.Analysis.Metrics = nil
	spec.CanaryNamespaces = nil
	w := newWorld(spec)
	w.fleet(1, oldVersion)
	w.defaultVersion = newVersion
	blocked := 0
	w.evictionBlocked = func(w *world, a Action) bool {
		blocked++
		return blocked <= 2
	}
	w.runUntil(t, 200, sluicev1.DataPlaneUpToDate)
	w.assertRestartedAtMostOnce(t)
	golden.Assert(t, "pdb-blocks-eviction", w.log)
}

func TestGoldenProgressDeadlineRollsBack(t *testing.T) {
	spec := fleetSpec()
	spec.Analysis.Metrics = nil
	spec.CanaryNamespaces = nil
	spec.ProgressDeadlineSeconds = ptr.To[int32](60)
	spec.Waves.MaxNamespaces = ptr.To[int32](1)
	w := newWorld(spec)
	w.fleet(2, oldVersion)
	w.defaultVersion = newVersion
	// ns-1's Deployment pins the old proxy in its pod template: restarting it does not help.
	w.workload(w.namespace("ns-1"), "Deployment", "web").templatePin = oldVersion
	w.runUntil(t, 200, sluicev1.DataPlaneRolledBack)
	w.assertRestartedAtMostOnce(t)
	if v := w.versions("ns-1"); v != oldVersion+" x6" {
		t.Errorf("ns-1 runs %s", v)
	}
	if _, ok := w.firstTouched["ns-2"]; ok {
		t.Error("ns-2 was touched")
	}
	golden.Assert(t, "progress-deadline", w.log)
}

func TestRecordAndFinish(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	d := Decision{Status: sluicev1.DataPlaneStatus{Waves: []sluicev1.DataPlaneWave{{Phase: sluicev1.WaveRestarting}}}}
	restart := Action{Type: ActionRestart, Wave: 0, Namespace: "ns-1", Kind: "Deployment", Name: "web", Value: "t1"}
	evict := Action{Type: ActionEvict, Wave: 0, Namespace: "ns-1", Kind: "StatefulSet", Name: "db", Pod: "db-1", UID: "u1", Value: "t1"}
	d.Record(restart, nil)
	d.Record(restart, nil) // recorded once
	d.Record(evict, nil)
	d.Record(Action{Type: ActionEvict, Wave: 0, Namespace: "ns-1", Kind: "StatefulSet", Name: "db", Pod: "db-0", UID: "u0", Value: "t1"},
		fmt.Errorf("%w: pod ns-1/db-0: disruption budget", ErrBlocked))
	d.Finish(now)
	w := d.Status.Waves[0]
	if len(w.Restarts) != 2 || w.Restarted != 2 || w.Evicted != 1 || w.Restarts[1].LastEvictedUID != "u1" {
		t.Fatalf("restarts %+v", w)
	}
	if w.LastUpdateAttemptResult != sluicev1.UpdateAttemptBlocked || !strings.HasSuffix(w.LastUpdateAttemptMessage, "; pod ns-1/db-0: disruption budget") {
		t.Fatalf("attempt %s %q", w.LastUpdateAttemptResult, w.LastUpdateAttemptMessage)
	}
	d2 := Decision{Status: *d.Status.DeepCopy()}
	d2.Record(restart, errors.New("boom"))
	d2.Finish(now.Add(time.Second))
	if w := d2.Status.Waves[0]; w.LastUpdateAttemptResult != sluicev1.UpdateAttemptFailed || !strings.Contains(w.LastUpdateAttemptMessage, "boom") {
		t.Fatalf("attempt %s %q", w.LastUpdateAttemptResult, w.LastUpdateAttemptMessage)
	}
}
