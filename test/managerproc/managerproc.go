// Package managerproc runs the Sluice manager (cmd/sluice) as a child process against a cluster,
// as a Deployment's pod would run it: its RSS and CPU come from /proc, its requests from its own
// /metrics. The scale benchmark (hack/benchscale) and the shard tests on the local cluster use it.
package managerproc

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

// Proc is one manager process.
type Proc struct {
	cmd *exec.Cmd
	// MetricsURL is its /metrics (plain HTTP on loopback).
	MetricsURL string
	// LogPath holds its stdout and stderr.
	LogPath string
	// PodName is the POD_NAME it runs with (the instance on its events).
	PodName string
	exited  chan error
}

// Build builds cmd/sluice of the repository at repo into dir and returns the binary.
// errors: the build's.
func Build(ctx context.Context, repo, dir string) (string, error) {
	bin := filepath.Join(dir, "sluice")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/sluice")
	cmd.Dir = repo
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the manager: %w\n%s", err, out)
	}
	return bin, nil
}

// Options of one manager process.
type Options struct {
	// Bin is the manager binary (Build); Kubeconfig the cluster's; LogPath receives its output.
	Bin, Kubeconfig, LogPath string
	// PodName is its POD_NAME (default "sluice-0").
	PodName string
	// Args are flags besides the defaults of Start (leader election on in kube-system, loopback
	// metrics and probes, a metrics server nothing answers on); later flags win.
	Args []string
}

// Start runs the manager with leader election on, as in production, and waits for its /metrics.
// errors: ports, a process that does not start or exits, metrics that never answer.
func Start(ctx context.Context, o Options) (*Proc, error) {
	bin, kubeconfig, logPath, extra := o.Bin, o.Kubeconfig, o.LogPath, o.Args
	if o.PodName == "" {
		o.PodName = "sluice-0"
	}
	ports, err := FreePorts(2)
	if err != nil {
		return nil, err
	}
	metricsPort, probePort := ports[0], ports[1]
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
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "POD_NAME="+o.PodName)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("starting the manager: %w", err)
	}
	m := &Proc{cmd: cmd, MetricsURL: fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort), LogPath: logPath,
		PodName: o.PodName, exited: make(chan error, 1)}
	go func() { m.exited <- cmd.Wait(); logf.Close() }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := m.Scrape(); err == nil {
			return m, nil
		}
		select {
		case err := <-m.exited:
			return nil, fmt.Errorf("manager exited: %v\n%s", err, Tail(logPath, 20))
		case <-ctx.Done():
			m.Stop()
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			m.Stop()
			return nil, fmt.Errorf("manager metrics did not answer within 60s\n%s", Tail(logPath, 20))
		}
	}
}

// Stop sends SIGTERM, and SIGKILL after 15 s, and waits for the exit.
func (m *Proc) Stop() {
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

// Kill ends the process at once (SIGKILL: no lease released, as when a node dies) and waits for
// the exit.
func (m *Proc) Kill() {
	if m == nil || m.cmd.Process == nil {
		return
	}
	_ = m.cmd.Process.Kill()
	err := <-m.exited
	m.exited <- err
}

// Alive reports an error once the process has exited.
func (m *Proc) Alive() error {
	select {
	case err := <-m.exited:
		m.exited <- err
		return fmt.Errorf("the manager exited: %v\n%s", err, Tail(m.LogPath, 20))
	default:
		return nil
	}
}

// Stats are the manager's resident memory and CPU time so far.
type Stats struct {
	RSSBytes int64
	CPU      time.Duration
}

// PID is the manager's process ID.
func (m *Proc) PID() int { return m.cmd.Process.Pid }

// Stats reads the manager's /proc/PID/status (VmRSS) and /proc/PID/stat (utime + stime).
func (m *Proc) Stats() (Stats, error) { return PIDStats(m.cmd.Process.Pid) }

// PIDStats reads the resident memory and CPU time so far of any process of this machine.
// errors: the process is gone, /proc is not Linux's.
func PIDStats(pid int) (Stats, error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Stats{}, err
	}
	var st Stats
	for _, line := range strings.Split(string(status), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			st.RSSBytes = kb * 1024
		}
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Stats{}, err
	}
	s := string(stat)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return Stats{}, errors.New("unexpected /proc/PID/stat")
	}
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	st.CPU = time.Duration(utime+stime) * 10 * time.Millisecond // USER_HZ = 100
	return st, nil
}

// Metrics is the manager's /metrics at one time.
type Metrics map[string]*dto.MetricFamily

// Scrape reads /metrics. errors: the request's, a status other than 200, a parse error.
func (m *Proc) Scrape() (Metrics, error) {
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(m.MetricsURL)
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

// Sum adds the values of family name whose labels include every pair of match.
func (s Metrics) Sum(name string, match ...string) float64 {
	f := s[name]
	if f == nil {
		return 0
	}
	total := 0.0
	for _, m := range f.GetMetric() {
		if !HasLabels(m, match) {
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

// ByLabels returns the counter values of family name keyed by the given labels' values, joined
// by a space.
func (s Metrics) ByLabels(name string, labels ...string) map[string]float64 {
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

// HasLabels reports whether series m has every label pair of match (name, value, name, value...).
func HasLabels(m *dto.Metric, match []string) bool {
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

// FreePorts returns n distinct TCP ports free on loopback now: every listener stays open until
// all are chosen, so the kernel cannot hand out one port twice (two ports asked for one after the
// other, each listener closed at once, can be the same: the manager's metrics and probe servers
// then collide).
func FreePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer ln.Close()
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// Tail returns the last n lines of a file.
func Tail(path string, n int) string {
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
