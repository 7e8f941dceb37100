package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// managerProc is the Sluice manager (cmd/sluice, built by the benchmark) running as a child
// process against the cluster: its RSS and CPU come from /proc, its requests from its own
// /metrics (sluice_kube_api_requests_total, counted by its transport).
type managerProc struct {
	cmd        *exec.Cmd
	metricsURL string
	logPath    string
	exited     chan error
}

// buildManager builds cmd/sluice into dir. errors: the build's.
func buildManager(ctx context.Context, repo, dir string) (string, error) {
	bin := filepath.Join(dir, "sluice")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/sluice")
	cmd.Dir = repo
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the manager: %w\n%s", err, out)
	}
	return bin, nil
}

// startManager runs bin against kubeconfig with the benchmark's flags (leader election on, as in
// production) and extra flags, logging to logPath, and waits for its /metrics.
// errors: ports, a process that does not start or exits, metrics that never answer.
func startManager(ctx context.Context, bin, kubeconfig, logPath string, extra []string) (*managerProc, error) {
	metricsPort, err := freePort()
	if err != nil {
		return nil, err
	}
	probePort, err := freePort()
	if err != nil {
		return nil, err
	}
	args := []string{
		"--leader-elect=true", "--leader-election-namespace=kube-system",
		"--metrics-bind-address=127.0.0.1:" + strconv.Itoa(metricsPort),
		"--health-probe-bind-address=127.0.0.1:" + strconv.Itoa(probePort),
		"--metrics-server=http://127.0.0.1:9", // the Canaries have no metrics: nothing queries it
	}
	if help, _ := exec.Command(bin, "--help").CombinedOutput(); bytes.Contains(help, []byte("-metrics-secure")) {
		args = append(args, "--metrics-secure=false") // plain HTTP on loopback
	}
	args = append(args, extra...)
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "POD_NAME=sluice-bench-0")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("starting the manager: %w", err)
	}
	m := &managerProc{cmd: cmd, metricsURL: fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort), logPath: logPath,
		exited: make(chan error, 1)}
	go func() { m.exited <- cmd.Wait(); logf.Close() }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := m.scrape(); err == nil {
			return m, nil
		}
		select {
		case err := <-m.exited:
			return nil, fmt.Errorf("manager exited: %v\n%s", err, tail(logPath, 20))
		case <-ctx.Done():
			m.stop()
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			m.stop()
			return nil, fmt.Errorf("manager metrics did not answer within 60s\n%s", tail(logPath, 20))
		}
	}
}

// stop sends SIGTERM, and SIGKILL after 15 s.
func (m *managerProc) stop() {
	if m == nil || m.cmd.Process == nil {
		return
	}
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.exited:
	case <-time.After(15 * time.Second):
		_ = m.cmd.Process.Kill()
		<-m.exited
	}
}

// alive reports an error once the process has exited.
func (m *managerProc) alive() error {
	select {
	case err := <-m.exited:
		m.exited <- err
		return fmt.Errorf("the manager exited: %v\n%s", err, tail(m.logPath, 20))
	default:
		return nil
	}
}

// procStats are the manager's resident memory and CPU time so far.
type procStats struct {
	rssBytes int64
	cpu      time.Duration
}

// stats reads /proc/PID/status (VmRSS) and /proc/PID/stat (utime + stime).
func (m *managerProc) stats() (procStats, error) {
	pid := m.cmd.Process.Pid
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return procStats{}, err
	}
	var st procStats
	for _, line := range strings.Split(string(status), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			st.rssBytes = kb * 1024
		}
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStats{}, err
	}
	s := string(stat)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return procStats{}, errors.New("unexpected /proc/PID/stat")
	}
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	st.cpu = time.Duration(utime+stime) * 10 * time.Millisecond // USER_HZ = 100
	return st, nil
}

// metricsSnapshot is the manager's /metrics at one time.
type metricsSnapshot map[string]*dto.MetricFamily

func (m *managerProc) scrape() (metricsSnapshot, error) {
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(m.metricsURL)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("metrics: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(resp.Body)
}

// sum adds the values of family name whose labels include every pair of match.
func (s metricsSnapshot) sum(name string, match ...string) float64 {
	f := s[name]
	if f == nil {
		return 0
	}
	total := 0.0
	for _, m := range f.GetMetric() {
		if !hasLabels(m, match) {
			continue
		}
		switch {
		case m.GetCounter() != nil:
			total += m.GetCounter().GetValue()
		case m.GetGauge() != nil:
			total += m.GetGauge().GetValue()
		case m.GetHistogram() != nil:
			total += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return total
}

// byLabels returns the counter values of family name keyed by the given labels' values, joined
// by a space.
func (s metricsSnapshot) byLabels(name string, labels ...string) map[string]float64 {
	out := map[string]float64{}
	f := s[name]
	if f == nil {
		return out
	}
	for _, m := range f.GetMetric() {
		var key []string
		for _, l := range labels {
			key = append(key, labelValue(m, l))
		}
		out[strings.Join(key, " ")] += m.GetCounter().GetValue()
	}
	return out
}

func hasLabels(m *dto.Metric, match []string) bool {
	for i := 0; i+1 < len(match); i += 2 {
		if labelValue(m, match[i]) != match[i+1] {
			return false
		}
	}
	return true
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
