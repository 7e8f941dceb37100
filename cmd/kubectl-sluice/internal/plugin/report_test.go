package plugin

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// TestReportOpensOffline writes the report of a rolled-back run with `kubectl sluice report NAME
// -o FILE` and opens the file in Chromium with the network off: the page makes no request but the
// file itself, logs no error, and shows every check of the run on the charts and in the table,
// the outcome, the last runs and the events.
func TestReportOpensOffline(t *testing.T) {
	tb := newTab(t)
	ns := env.Namespace(t)
	f := newRunFixture()
	cn := f.canary(t, ns, "podinfo")
	st := f.status()
	end := metav1.NewTime(st.Run.Checks[len(st.Run.Checks)-1].Time.Add(time.Second))
	st.Phase, st.CanaryWeight, st.LastTransitionTime = sluicev1.CanaryPhaseFailed, 0, &end
	st.Run.EndTime, st.Run.Outcome = &end, sluicev1.RunRolledBack
	setStatus(t, cn, st)
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "podinfo.rollback"},
		InvolvedObject: corev1.ObjectReference{Kind: "Canary", Namespace: ns, Name: "podinfo", UID: cn.UID},
		Type:           corev1.EventTypeWarning, Reason: "RolledBack", Message: "Rolling back 7d9f6c5b4: aborted by request", LastTimestamp: end, Count: 1}
	if err := env.Client.Create(context.Background(), ev); err != nil {
		t.Fatal(err)
	}

	path := filepath.Join(t.TempDir(), "run.html")
	var out bytes.Buffer
	cmd := NewRootCommand(Options{Out: &out, ErrOut: io.Discard, Now: time.Now,
		Connect: func(KubeFlags) (client.Client, string, error) { return env.Client, ns, nil }})
	cmd.SetArgs([]string{"report", "podinfo", "-o", path})
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatalf("report: %v", err)
	}
	if want := "canary " + ns + "/podinfo: report written to " + path + "\n"; out.String() != want {
		t.Errorf("output %q, want %q", out.String(), want)
	}
	html, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if refs := regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?(https?:|//|/assets)`).FindAll(html, -1); len(refs) > 0 {
		t.Errorf("the report refers to other files: %q", refs)
	}
	t.Logf("report: %s (%d bytes)", path, len(html))

	var mu sync.Mutex
	var requests []string
	sent := chromedp.Events(tb.ctx, network.RequestWillBeSent)
	go func() {
		for e, err := range sent {
			if err != nil {
				return
			}
			mu.Lock()
			requests = append(requests, e.Request.URL)
			mu.Unlock()
		}
	}()
	if _, err := chromedp.Call(tb.ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(tb.ctx, network.OverrideNetworkState, network.OverrideNetworkStateParams{Offline: true}); err != nil {
		t.Fatal(err)
	}
	tb.open("file://" + path)

	if n := eval[int](tb, `document.querySelectorAll('.weight-chart circle.check').length`); n != 6 {
		t.Errorf("weight chart: %d checks, want 6", n)
	}
	for _, name := range []string{sluicev1.MetricRequestSuccessRate, sluicev1.MetricRequestDuration} {
		if n := eval[int](tb, `document.querySelectorAll('svg.metric-chart[data-metric="`+name+`"] g.point').length`); n != 6 {
			t.Errorf("%s: %d points, want 6", name, n)
		}
	}
	if rows := eval[int](tb, `document.querySelectorAll('#checks-table tbody tr').length`); rows != 6 {
		t.Errorf("checks table: %d rows", rows)
	}
	text := eval[string](tb, `document.getElementById('main').innerText`)
	for _, want := range []string{"RolledBack", "Rolling back 7d9f6c5b4: aborted by request", "Promotion of 5c4b3a291 completed", "podinfo:6.7.1"} {
		if !strings.Contains(text, want) {
			t.Errorf("the report does not show %q", want)
		}
	}
	if n := eval[int](tb, `document.querySelectorAll('#levers, dialog').length`); n != 0 {
		t.Errorf("the report has %d lever elements", n)
	}
	tb.screenshots("report")
	mu.Lock()
	defer mu.Unlock()
	// The browser reports its one request, for the file: the watch sees requests.
	if len(requests) == 0 || requests[0] != "file://"+path {
		t.Errorf("requests seen: %v, want the file first", requests)
	}
	for _, u := range requests {
		if u != "file://"+path && !strings.HasPrefix(u, "data:") {
			t.Errorf("the report requested %s", u)
		}
	}
}
