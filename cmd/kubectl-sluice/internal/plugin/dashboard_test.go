package plugin

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// TestDashboardOverview opens the overview in Chromium: every Canary of the namespaces is listed
// with its phase, weight and failed checks, the counts per phase add up, the text, namespace and
// phase filters and the sorting work, a DataPlane is listed, and a status change reaches the page
// within 2 s without reloading it.
func TestDashboardOverview(t *testing.T) {
	tb := newTab(t)
	ns1, ns2 := env.Namespace(t), env.Namespace(t)
	phases := []sluicev1.CanaryPhase{sluicev1.CanaryPhaseSucceeded, sluicev1.CanaryPhaseProgressing, sluicev1.CanaryPhaseFailed,
		sluicev1.CanaryPhaseSucceeded, sluicev1.CanaryPhaseWaiting}
	for i, p := range phases {
		ns := ns1
		if i >= 3 {
			ns = ns2
		}
		cn := newCanary(t, ns, fmt.Sprintf("app-%d", i), nil)
		setStatus(t, cn, sluicev1.CanaryStatus{Phase: p, CanaryWeight: int32(10 * i), FailedChecks: int32(i % 3), LastTransitionTime: &metav1.Time{Time: time.Now()}})
	}
	moving := newRunFixture().canary(t, ns2, "checkout")
	dp := &sluicev1.DataPlane{ObjectMeta: metav1.ObjectMeta{Name: "mesh-" + ns1},
		Spec: sluicev1.DataPlaneSpec{Mesh: sluicev1.MeshLinkerd, Version: "stable-2.14.10"}}
	if err := env.Client.Create(context.Background(), dp); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), dp) })

	url := runDashboard(t, env.Config, "-A")
	tb.open(url)
	inMine := fmt.Sprintf(`[...document.querySelectorAll('#canary-rows tr[data-key]')].filter(tr => [%s, %s].includes(tr.dataset.key.split('/')[0]))`,
		jsString(ns1), jsString(ns2))
	tb.waitJS(inMine+`.length === 6`, 10*time.Second)
	if got := eval[string](tb, `document.querySelector('tr[data-key="`+ns2+`/checkout"]').innerText`); !strings.Contains(got, "Progressing") ||
		!strings.Contains(got, "30%") || !strings.Contains(got, "2/5") || !strings.Contains(got, "podinfo:6.7.0 → podinfo:6.7.1") {
		t.Errorf("the moving canary's row reads %q", got)
	}
	if got := eval[string](tb, `document.querySelector('#dataplanes').innerText`); !strings.Contains(got, "mesh-"+ns1) || !strings.Contains(got, "stable-2.14.10") {
		t.Errorf("data planes: %q", got)
	}
	// Counts per phase cover every row; the phase filter keeps its rows only.
	total := eval[int](tb, `document.querySelectorAll('#canary-rows tr[data-key]').length`)
	if got := eval[string](tb, `document.querySelector('#phase-counts button[data-phase=""]').innerText`); got != fmt.Sprintf("All %d", total) {
		t.Errorf("the All chip reads %q with %d rows", got, total)
	}
	tb.click(`#phase-counts button[data-phase="Failed"]`)
	tb.waitJS(`[...document.querySelectorAll('#canary-rows tr[data-key]')].every(tr => tr.dataset.phase === 'Failed')`, 2*time.Second)
	tb.click(`#phase-counts button[data-phase=""]`)
	// The namespace filter, then the text filter.
	tb.choose(`#namespace-filter`, ns2)
	tb.waitJS(`document.querySelectorAll('#canary-rows tr[data-key]').length === 3`, 2*time.Second)
	tb.typeInto(`#filter`, "checkout")
	tb.waitJS(`document.querySelectorAll('#canary-rows tr[data-key]').length === 1`, 2*time.Second)
	tb.typeInto(`#filter`, "")
	// Sorting by weight, descending on the second click.
	tb.click(`th[data-key="weight"] button`)
	tb.click(`th[data-key="weight"] button`)
	if got := eval[[]int](tb, `[...document.querySelectorAll('#canary-rows tr[data-key]')].map(tr => +tr.dataset.weight)`); !descending(got) {
		t.Errorf("weights sorted descending: %v", got)
	}
	tb.screenshots("overview")

	// Live: a status change reaches the row without a reload.
	st := moving.Status
	st.CanaryWeight = 40
	setStatus(t, moving, st)
	took := tb.waitJS(`document.querySelector('tr[data-key="`+ns2+`/checkout"]').dataset.weight === '40'`, 2*time.Second)
	t.Logf("a status change reached the overview in %s", took)
}

func descending(xs []int) bool {
	for i := 1; i < len(xs); i++ {
		if xs[i] > xs[i-1] {
			return false
		}
	}
	return len(xs) > 1
}

// TestDashboardCanaryPage opens a Canary's page during a run: the weight chart has a point per
// check; each metric's chart has one point per check it judged, with the verdict of status and
// its colour (pass, fail, no data, error, skipped); the checks table, the gate, what changed (the
// images and the tracked ConfigMap by checksum), conditions, events newest first and the last
// runs are shown.
func TestDashboardCanaryPage(t *testing.T) {
	tb := newTab(t)
	ns := env.Namespace(t)
	f := newRunFixture()
	cn := f.canary(t, ns, "podinfo")
	for i, reason := range []string{"CheckFailed", "WeightAdvanced"} {
		ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("podinfo.%d", i)},
			InvolvedObject: corev1.ObjectReference{Kind: "Canary", APIVersion: sluicev1.GroupVersion.String(), Namespace: ns, Name: "podinfo", UID: cn.UID},
			Type:           corev1.EventTypeNormal, Reason: reason, Message: "event " + reason,
			LastTimestamp: metav1.NewTime(time.Now().Add(time.Duration(i) * time.Minute)), Count: 1}
		if err := env.Client.Create(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
	}
	url := runDashboard(t, env.Config, "-n", ns)
	tb.open(url + "#/canary/" + ns + "/podinfo")

	if got := eval[string](tb, `document.getElementById('weight-text').innerText`); got != "30%" {
		t.Errorf("weight shown %q", got)
	}
	if n := eval[int](tb, `document.querySelectorAll('.weight-chart circle.check').length`); n != 6 {
		t.Errorf("weight chart: %d check points, want 6", n)
	}
	// Each metric: one point per check, with the verdict and colour of status.
	for m, name := range []string{sluicev1.MetricRequestSuccessRate, sluicev1.MetricRequestDuration} {
		got := eval[[]map[string]string](tb, fmt.Sprintf(`(() => {
			const probe = document.createElementNS('http://www.w3.org/2000/svg', 'circle');
			document.querySelector('svg.metric-chart').append(probe);
			const colour = (v) => { probe.style.fill = 'var(--' + v + ')'; return getComputedStyle(probe).fill; };
			const out = [...document.querySelectorAll('svg.metric-chart[data-metric="%s"] g.point')].map(g => {
				const mark = g.querySelector('.pt');
				const st = getComputedStyle(mark);
				return {check: g.dataset.check, verdict: g.dataset.verdict, value: g.dataset.value,
					paint: ['NoData', 'Skipped'].includes(g.dataset.verdict) ? st.stroke : st.fill,
					want: colour({Pass: 'pass', Fail: 'fail', NoData: 'nodata', Error: 'error', Skipped: 'skipped'}[g.dataset.verdict])};
			});
			probe.remove();
			return out;
		})()`, name))
		if len(got) != len(f.verdicts) {
			t.Fatalf("%s: %d points, want %d: %v", name, len(got), len(f.verdicts), got)
		}
		for i, p := range got {
			if p["check"] != fmt.Sprint(i) || p["verdict"] != string(f.verdicts[i][m]) || p["paint"] != p["want"] {
				t.Errorf("%s check %d: %v, want verdict %s painted %s", name, i, p, f.verdicts[i][m], p["want"])
			}
			if want := strings.TrimSuffix(strings.TrimSuffix(f.values[i][m], "0"), ".0"); !strings.HasPrefix(f.values[i][m], p["value"]) && want != p["value"] {
				t.Errorf("%s check %d: value %q, want %q", name, i, p["value"], f.values[i][m])
			}
		}
	}
	text := eval[string](tb, `document.getElementById('main').innerText`)
	for _, want := range []string{
		"min 99", "max 500", // the threshold bands' labels
		"load-test", "confirm-promotion", // the gate
		"podinfo:6.7.0", "podinfo:6.7.1", "configmap/podinfo-config", "a1b2c3d4", // what changed
		"Rolling back 3b2a19f08: failed checks threshold reached (5)", "Promoted", "RolledBack", // the last runs
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the page does not show %q", want)
		}
	}
	if rows := eval[int](tb, `document.querySelectorAll('#checks-table tbody tr').length`); rows != 6 {
		t.Errorf("checks table: %d rows", rows)
	}
	tb.waitJS(`document.querySelectorAll('#events tbody tr').length === 2`, 5*time.Second)
	if first := eval[string](tb, `document.querySelector('#events tbody tr').innerText`); !strings.Contains(first, "WeightAdvanced") {
		t.Errorf("the newest event is not first: %q", first)
	}
	tb.screenshots("canary")
}

// TestDashboardLevers pulls abort from the page with the keyboard, through its confirmation
// dialog: the Canary gets the same request annotation `kubectl sluice abort` sets. A user bound to
// a read-only role sees the apiserver's Forbidden and nothing changes; --read-only shows no
// lever.
func TestDashboardLevers(t *testing.T) {
	ns := env.Namespace(t)
	key := types.NamespacedName{Namespace: ns, Name: "podinfo"}
	newRunFixture().canary(t, ns, "podinfo")

	t.Run("abort", func(t *testing.T) {
		tb := newTab(t)
		tb.open(runDashboard(t, env.Config, "-n", ns) + "#/canary/" + ns + "/podinfo")
		if got := eval[[]string](tb, `[...document.querySelectorAll('#levers button')].map(b => b.dataset.lever)`); strings.Join(got, ",") != "promote,abort,pause" {
			t.Errorf("levers of a Progressing canary: %v", got)
		}
		// Keyboard only: focus Abort, Enter opens the dialog on Cancel, Tab reaches Abort, Enter.
		tb.js(`document.querySelector('#levers button[data-lever="abort"]').focus()`)
		tb.keys("\r")
		tb.waitJS(`document.getElementById('confirm-dialog').open && document.activeElement.id === 'cancel'`, 2*time.Second)
		if ann := stored(t, key).GetAnnotations(); ann[AnnotationAbort] != "" {
			t.Fatalf("aborted before the confirmation: %v", ann)
		}
		tb.keys("\t")
		tb.waitJS(`document.activeElement.id === 'confirm'`, time.Second)
		tb.keys("\r")
		tb.waitJS(`document.querySelector('#lever-answer [data-ok="true"]')`, 5*time.Second)
		answer := eval[string](tb, `document.getElementById('lever-answer').innerText`)
		stamp := stored(t, key).GetAnnotations()[AnnotationAbort]
		if _, err := time.Parse(time.RFC3339, stamp); err != nil || answer != fmt.Sprintf("canary %s: rollback requested (%s=%s)", key, AnnotationAbort, stamp) {
			t.Errorf("annotation %q, answer %q", stamp, answer)
		}
	})

	t.Run("forbidden", func(t *testing.T) {
		tb := newTab(t)
		before := stored(t, key)
		tb.open(runDashboard(t, viewer(t), "-n", ns) + "#/canary/" + ns + "/podinfo")
		tb.click(`#levers button[data-lever="abort"]`)
		tb.click(`#confirm`)
		tb.waitJS(`document.querySelector('#lever-answer [data-ok="false"]')`, 5*time.Second)
		answer := eval[string](tb, `document.getElementById('lever-answer').innerText`)
		if !strings.Contains(answer, `canaries.sluice.dev "podinfo" is forbidden: User "dashboard-viewer-`) ||
			!strings.Contains(answer, `cannot patch resource "canaries" in API group "sluice.dev" in the namespace "`+ns+`"`) {
			t.Errorf("answer %q, want the apiserver's Forbidden", answer)
		}
		if after := stored(t, key); after.GetResourceVersion() != before.GetResourceVersion() {
			t.Errorf("the canary changed: %v", after.GetAnnotations())
		}
		tb.screenshots("forbidden")
	})

	t.Run("read-only", func(t *testing.T) {
		tb := newTab(t)
		tb.open(runDashboard(t, env.Config, "-n", ns, "--read-only") + "#/canary/" + ns + "/podinfo")
		if n := eval[int](tb, `document.querySelectorAll('#levers, #levers button, dialog').length`); n != 0 {
			t.Errorf("--read-only shows %d lever elements", n)
		}
		if token := eval[string](tb, `document.querySelector('meta[name="sluice-token"]').content`); token != "" {
			t.Errorf("--read-only hands out a token: %q", token)
		}
	})
}

// TestDashboardDataPlanePage opens a DataPlane's page: the waves on a timeline with their
// phases, the namespaces with their counts, the pods left behind by name, and the levers its
// phase allows (approve while it waits for approval).
func TestDashboardDataPlanePage(t *testing.T) {
	tb := newTab(t)
	ctx := context.Background()
	name := "mesh-" + env.Namespace(t)
	dp := &sluicev1.DataPlane{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: sluicev1.DataPlaneSpec{Mesh: sluicev1.MeshLinkerd, Version: "stable-2.14.10"}}
	if err := env.Client.Create(ctx, dp); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, dp) })
	now := time.Now()
	at := func(d time.Duration) *metav1.Time { t := metav1.NewTime(now.Add(d)); return &t }
	dp.Status = sluicev1.DataPlaneStatus{
		Phase: sluicev1.DataPlaneWaiting, Version: "stable-2.14.10", CurrentWave: 1, Desired: 14, Current: 6,
		ControlPlane: sluicev1.ControlPlaneStatus{Version: "stable-2.14.10", Ready: true},
		Waves: []sluicev1.DataPlaneWave{
			{Namespaces: []string{"shop"}, Phase: sluicev1.WaveSucceeded, Desired: 6, Current: 6, StartedAt: at(-10 * time.Minute), CompletedAt: at(-6 * time.Minute)},
			{Namespaces: []string{"payments", "search"}, Phase: sluicev1.WavePending, Desired: 8},
		},
		Namespaces: []sluicev1.DataPlaneNamespace{
			{Namespace: "shop", Wave: 0, Desired: 6, Current: 6, Status: sluicev1.NamespaceUpToDate},
			{Namespace: "payments", Wave: 1, Desired: 5, Status: sluicev1.NamespacePending},
			{Namespace: "search", Wave: 1, Desired: 3, Status: sluicev1.NamespaceBlocked, Reason: "PDB search-pdb allows no eviction"},
		},
		UnmanagedPods: []string{"search/indexer-0"},
		Conditions: []metav1.Condition{{Type: sluicev1.ConditionReady, Status: metav1.ConditionFalse, Reason: sluicev1.ReasonAwaitingApproval,
			Message: "The canary wave succeeded; approve the fleet", LastTransitionTime: metav1.NewTime(now)}},
	}
	if err := env.Client.Status().Update(ctx, dp); err != nil {
		t.Fatal(err)
	}
	tb.open(runDashboard(t, env.Config) + "#/dataplane/" + name)
	if got := eval[[]string](tb, `[...document.querySelectorAll('.waves-chart rect.wave')].map(r => r.dataset.phase)`); strings.Join(got, ",") != "Succeeded" {
		t.Errorf("waves drawn: %v (the pending wave has not started)", got)
	}
	text := eval[string](tb, `document.getElementById('main').innerText`)
	for _, want := range []string{"payments", "PDB search-pdb allows no eviction", "search/indexer-0", "6 / 14", "not started"} {
		if !strings.Contains(text, want) {
			t.Errorf("the page does not show %q", want)
		}
	}
	if got := eval[[]string](tb, `[...document.querySelectorAll('#levers button')].map(b => b.dataset.lever)`); strings.Join(got, ",") != "approve,abort,pause" {
		t.Errorf("levers: %v", got)
	}
	tb.screenshots("dataplane")
}
