package promtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/common/model"
)

// ErrNotInstalled means the prometheus or promtool binary is not on PATH.
var ErrNotInstalled = errors.New("prometheus not installed (run hack/install-prometheus.sh)")

// Config describes the server to start. The zero value starts an empty server.
type Config struct {
	// Series are backfilled before start (see WriteOpenMetrics).
	Series []Series
	// OpenMetrics are complete OpenMetrics documents (ending in "# EOF") backfilled before start,
	// each with its own promtool run.
	OpenMetrics []string
	// ScrapeTargets are host:port addresses scraped at MetricsPath every ScrapeInterval, with
	// job="promtest".
	ScrapeTargets []string
	// MetricsPath of the targets. Default /metrics.
	MetricsPath string
	// ScrapeInterval of the targets (global scrape_interval). Default 1s.
	ScrapeInterval time.Duration
	// Retention is --storage.tsdb.retention.time. Default 100y (the largest Prometheus accepts).
	Retention time.Duration
	// StartTimeout bounds the backfill and the wait for readiness. Default 60s.
	StartTimeout time.Duration
	// Dir holds the data, config and backfill files. Default a new temporary folder, removed by
	// Stop; a given Dir is kept.
	Dir string
	// Prometheus and Promtool are the binaries. Default "prometheus" and "promtool" on PATH.
	Prometheus, Promtool string
	// ExtraArgs are appended to the prometheus command line.
	ExtraArgs []string
	// Log, when set, also receives the server's output.
	Log io.Writer
}

// Server is a running Prometheus. Its methods are safe for concurrent use.
type Server struct {
	address string
	dir     string
	ownDir  bool
	cmd     *exec.Cmd
	exited  chan struct{} // closed when the process has exited
	logs    *tailBuffer

	stopOnce sync.Once
	stopErr  error
}

// Start backfills cfg's series, starts Prometheus on a free 127.0.0.1 port and waits until it is
// ready. ctx bounds the start only, not the server's life: call Stop. errors: ErrNotInstalled,
// promtool failures (with its output), a server that exits or is not ready within StartTimeout
// (with the tail of its log).
func Start(ctx context.Context, cfg Config) (*Server, error) {
	cfg.setDefaults()
	prom, err := exec.LookPath(cfg.Prometheus)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotInstalled, err)
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()

	dir, ownDir := cfg.Dir, false
	if dir == "" {
		if dir, err = os.MkdirTemp("", "promtest-"); err != nil {
			return nil, err
		}
		ownDir = true
	}
	fail := func(err error) (*Server, error) {
		if ownDir {
			_ = os.RemoveAll(dir)
		}
		return nil, err
	}
	dataDir := filepath.Join(dir, "data")
	if err := backfill(ctx, cfg, dir, dataDir); err != nil {
		return fail(err)
	}
	configFile := filepath.Join(dir, "prometheus.yml")
	if err := writeConfig(configFile, cfg); err != nil {
		return fail(err)
	}

	// A free port can be taken by someone else before Prometheus binds it: try a few.
	const attempts = 3
	for attempt := 1; ; attempt++ {
		s, err := launch(ctx, cfg, prom, configFile, dataDir)
		if err == nil {
			s.dir, s.ownDir = dir, ownDir
			return s, nil
		}
		if attempt == attempts || !strings.Contains(err.Error(), "address already in use") {
			return fail(err)
		}
	}
}

func (cfg *Config) setDefaults() {
	if cfg.Prometheus == "" {
		cfg.Prometheus = "prometheus"
	}
	if cfg.Promtool == "" {
		cfg.Promtool = "promtool"
	}
	if cfg.MetricsPath == "" {
		cfg.MetricsPath = "/metrics"
	}
	if cfg.ScrapeInterval <= 0 {
		cfg.ScrapeInterval = time.Second
	}
	if cfg.Retention <= 0 {
		cfg.Retention = 100 * 365 * 24 * time.Hour
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = 60 * time.Second
	}
}

// launch starts one prometheus process and waits until it is ready.
func launch(ctx context.Context, cfg Config, prom, configFile, dataDir string) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	listen := fmt.Sprintf("127.0.0.1:%d", port)
	args := append([]string{
		"--config.file=" + configFile,
		"--storage.tsdb.path=" + dataDir,
		"--storage.tsdb.retention.time=" + model.Duration(cfg.Retention).String(),
		"--web.listen-address=" + listen,
	}, cfg.ExtraArgs...)
	s := &Server{address: "http://" + listen, exited: make(chan struct{}), logs: &tailBuffer{max: 64 << 10}}
	var out io.Writer = s.logs
	if cfg.Log != nil {
		out = io.MultiWriter(s.logs, cfg.Log)
	}
	s.cmd = exec.Command(prom, args...)
	s.cmd.Stdout, s.cmd.Stderr = out, out
	s.cmd.SysProcAttr = sysProcAttr()
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", prom, err)
	}
	go func() {
		_ = s.cmd.Wait()
		close(s.exited)
	}()
	if err := s.waitReady(ctx); err != nil {
		_ = s.kill()
		return nil, fmt.Errorf("%w; prometheus log:\n%s", err, s.Logs())
	}
	return s, nil
}

// waitReady polls /-/ready until it answers 200, the process exits or ctx ends.
func (s *Server) waitReady(ctx context.Context) error {
	hc := &http.Client{Timeout: 2 * time.Second}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.address+"/-/ready", nil)
		if resp, err := hc.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-s.exited:
			return fmt.Errorf("prometheus exited before it was ready (%v)", s.cmd.ProcessState)
		case <-ctx.Done():
			return fmt.Errorf("prometheus at %s not ready: %w", s.address, ctx.Err())
		case <-tick.C:
		}
	}
}

// Address is the server's base URL, e.g. http://127.0.0.1:41234.
func (s *Server) Address() string { return s.address }

// Dir is the folder holding the data, config and backfill files.
func (s *Server) Dir() string { return s.dir }

// Logs returns the last 64 KiB of the server's output.
func (s *Server) Logs() string { return s.logs.String() }

// Stop terminates the server (SIGTERM, then SIGKILL after 10s), waits for it to exit and removes
// its temporary folder. It is idempotent and returns the same result every time.
// errors: the folder could not be removed.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(10 * time.Second):
			_ = s.kill()
		}
		if s.ownDir {
			s.stopErr = os.RemoveAll(s.dir)
		}
	})
	return s.stopErr
}

// kill kills the process and waits for it to exit.
func (s *Server) kill() error {
	err := s.cmd.Process.Kill()
	<-s.exited
	if errors.Is(err, os.ErrProcessDone) {
		return nil
	}
	return err
}

// freePort returns a TCP port free on 127.0.0.1 at the time of the call.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// writeConfig writes the Prometheus configuration (JSON, which is YAML).
func writeConfig(path string, cfg Config) error {
	interval := model.Duration(cfg.ScrapeInterval).String()
	type staticConfig struct {
		Targets []string `json:"targets"`
	}
	type scrapeConfig struct {
		JobName       string         `json:"job_name"`
		MetricsPath   string         `json:"metrics_path"`
		StaticConfigs []staticConfig `json:"static_configs"`
	}
	c := struct {
		Global        map[string]string `json:"global"`
		ScrapeConfigs []scrapeConfig    `json:"scrape_configs,omitempty"`
	}{
		Global: map[string]string{
			"scrape_interval":     interval,
			"scrape_timeout":      interval,
			"evaluation_interval": interval,
		},
	}
	if len(cfg.ScrapeTargets) > 0 {
		c.ScrapeConfigs = []scrapeConfig{{
			JobName:       "promtest",
			MetricsPath:   cfg.MetricsPath,
			StaticConfigs: []staticConfig{{Targets: cfg.ScrapeTargets}},
		}}
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
