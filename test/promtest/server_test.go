package promtest

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

var t0 = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

func TestBackfill(t *testing.T) {
	s := StartT(t, Config{
		Series: []Series{
			Counter("req_total", map[string]string{"code": "200", "odd": `a"b\c`}, t0, t0.Add(10*time.Minute), 15*time.Second, 10),
			Gauge("temp", nil, t0, t0.Add(10*time.Minute), 15*time.Second, 21.5),
		},
		OpenMetrics: []string{"raw_metric{x=\"1\"} 7 " + unix(t0.Add(time.Minute)) + "\n# EOF\n"},
	})
	ctx := context.Background()
	at := t0.Add(5 * time.Minute)

	r, err := s.Query(ctx, `sum(rate(req_total{odd="a\"b\\c"}[1m]))`, at)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(r.Result), `"10"`) {
		t.Errorf("rate = %s, want 10", r.Result)
	}
	r, err = s.Query(ctx, `temp`, at)
	if err != nil || !strings.Contains(string(r.Result), `"21.5"`) {
		t.Errorf("temp = %s, %v; want 21.5", r.Result, err)
	}
	r, err = s.Query(ctx, `raw_metric`, t0.Add(2*time.Minute))
	if err != nil || !strings.Contains(string(r.Result), `"7"`) {
		t.Errorf("raw_metric = %s, %v; want 7", r.Result, err)
	}
	// Outside the backfilled range (and the 5m lookback) there is nothing.
	r, err = s.Query(ctx, `temp`, t0.Add(time.Hour))
	if err != nil || !r.Empty() {
		t.Errorf("temp an hour later = %s, %v; want empty", r.Result, err)
	}
}

func TestLiveScrape(t *testing.T) {
	exporter := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write([]byte("promtest_live_total{app=\"x\"} 42\n"))
	}))
	defer exporter.Close()
	u, _ := url.Parse(exporter.URL)

	s := StartT(t, Config{ScrapeTargets: []string{u.Host}, ScrapeInterval: time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	if err := s.WaitForQuery(ctx, `promtest_live_total{job="promtest",app="x"} == 42`); err != nil {
		t.Fatal(err)
	}
}

func TestStopLeavesNothing(t *testing.T) {
	s, err := Start(context.Background(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	pid, dir := s.cmd.Process.Pid, s.Dir()
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("process %d still exists after Stop (kill -0: %v)", pid, err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("dir %s still exists after Stop: %v", dir, err)
	}
	if _, err := http.Get(s.Address() + "/-/ready"); err == nil {
		t.Errorf("%s still answers after Stop", s.Address())
	}
}

func TestStartErrors(t *testing.T) {
	ctx := context.Background()
	if _, err := Start(ctx, Config{Prometheus: "no-such-prometheus"}); !errors.Is(err, ErrNotInstalled) {
		t.Errorf("missing binary: err = %v, want ErrNotInstalled", err)
	}
	_, err := Start(ctx, Config{OpenMetrics: []string{"not openmetrics at all"}})
	if err == nil || !strings.Contains(err.Error(), "promtool") {
		t.Errorf("bad backfill: err = %v, want a promtool error", err)
	}
	_, err = Start(ctx, Config{ExtraArgs: []string{"--no-such-flag"}})
	if err == nil || !strings.Contains(err.Error(), "exited") {
		t.Errorf("bad flag: err = %v, want an exit error with the log", err)
	}
}

func TestWriteOpenMetrics(t *testing.T) {
	var b strings.Builder
	err := WriteOpenMetrics(&b, []Series{
		{Name: "b_total", Labels: map[string]string{"z": "1", "a": "x\"y\\z\nw"}, Samples: []Sample{{t0.Add(time.Second), 2}, {t0, 1}}},
		{Name: "a", Samples: []Sample{{t0, math.Inf(1)}, {t0.Add(time.Second), math.NaN()}}},
		{Name: "b_total", Labels: map[string]string{"z": "2"}, Samples: []Sample{{t0, 0.5}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `b_total{a="x\"y\\z\nw",z="1"} 1 1704067200
b_total{a="x\"y\\z\nw",z="1"} 2 1704067201
b_total{z="2"} 0.5 1704067200
a +Inf 1704067200
a NaN 1704067201
# EOF
`
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
	if err := WriteOpenMetrics(&b, []Series{{Name: "bad-name"}}); err == nil {
		t.Error("invalid metric name accepted")
	}
	if err := WriteOpenMetrics(&b, []Series{{Name: "ok", Labels: map[string]string{"bad-label": "x"}}}); err == nil {
		t.Error("invalid label name accepted")
	}
}

func unix(t time.Time) string { return formatValue(float64(t.Unix())) }
