package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// stopGrace is how long a component gets to exit after SIGTERM before its process group is killed.
const stopGrace = 10 * time.Second

// process is one running component. Each runs in its own process group (pgid == pid) so that a
// stop signal reaches anything it might fork.
type process struct {
	name    string
	bin     string
	logPath string
	cmd     *exec.Cmd
	done    chan struct{} // closed once the process has exited and been reaped
	waitErr error         // valid after done is closed
}

// startProcess runs bin with args and, on top of this process's environment, env ("NAME=value"),
// appending stdout and stderr to logPath. Unless detached, the child gets SIGKILL when this
// process dies (Pdeathsig on Linux). Linux sends Pdeathsig when the forking *thread* exits, so the
// goroutine that starts the child keeps its OS thread locked until the child has exited: the Go
// runtime never ends a locked thread while its goroutine runs.
func startProcess(name, bin, logPath string, detached bool, env []string, args ...string) (*process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = sysProcAttr(detached)
	p := &process{name: name, bin: bin, logPath: logPath, cmd: cmd, done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		err := cmd.Start()
		started <- err
		if err == nil {
			p.waitErr = cmd.Wait()
		}
		_ = logFile.Close()
		close(p.done)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	return p, nil
}

func (p *process) pid() int { return p.cmd.Process.Pid }

// exited reports whether the process has ended (it has then been reaped too).
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// exitError describes how the process ended, with the tail of its log.
func (p *process) exitError() error {
	return fmt.Errorf("%s exited (%v); last lines of %s:\n%s", p.name, p.waitErr, p.logPath, logTail(p.logPath, 15))
}

// stop sends SIGTERM to the process group, waits up to grace, then SIGKILLs the group.
func (p *process) stop(grace time.Duration) error {
	if p.exited() {
		// Do not signal the group now: with its leader long gone, the PID may be in use again.
		return nil
	}
	killGroup(p.pid(), syscall.SIGTERM)
	select {
	case <-p.done:
		killGroup(p.pid(), syscall.SIGKILL)
		return nil
	case <-time.After(grace):
	}
	killGroup(p.pid(), syscall.SIGKILL)
	select {
	case <-p.done:
		return nil
	case <-time.After(5 * time.Second):
		return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", p.name, p.pid())
	}
}

func killGroup(pgid int, sig syscall.Signal) {
	_ = syscall.Kill(-pgid, sig)
}

// logTail returns the last n lines of the file at path (or why it could not be read).
func logTail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "  " + strings.Join(lines, "\n  ")
}

// pidFile records a started process so that another process (`hack/cluster down`) can stop it.
// The binary path guards against stopping an unrelated process that reuses the PID.
func writePIDFile(dir string, p *process) error {
	return os.WriteFile(filepath.Join(dir, p.name+".pid"), fmt.Appendf(nil, "%d %s\n", p.pid(), p.bin), 0o644)
}

// StopRecorded stops the components of a cluster started (usually with Options.Detach) by another
// process with state in dir: for each pid file in dir/pids, newest component first, it sends
// SIGTERM to the process group, waits up to grace, then SIGKILLs the group. A PID whose command
// line no longer names the recorded binary is skipped (the process is gone and the PID reused).
// Each pid file is removed once its process is gone. It returns the names of the stopped
// components. errors: processes that survive SIGKILL.
func StopRecorded(dir string, grace time.Duration) ([]string, error) {
	var stopped []string
	var errs []error
	for _, name := range stopOrder {
		path := filepath.Join(dir, "pids", name+".pid")
		data, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		} else if err != nil {
			errs = append(errs, err)
			continue
		}
		fields := strings.Fields(string(data))
		pid, err := strconv.Atoi(fields[0])
		if err != nil || len(fields) < 2 {
			errs = append(errs, fmt.Errorf("malformed pid file %s", path))
			continue
		}
		if running(pid) && commandIs(pid, fields[1]) {
			if err := stopPID(pid, grace); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
				continue
			}
			stopped = append(stopped, name)
		}
		_ = os.Remove(path)
	}
	return stopped, errors.Join(errs...)
}

// stopPID stops a process that is not our child: we cannot wait for it, so poll its state.
func stopPID(pid int, grace time.Duration) error {
	killGroup(pid, syscall.SIGTERM)
	if waitGone(pid, grace) {
		killGroup(pid, syscall.SIGKILL)
		return nil
	}
	killGroup(pid, syscall.SIGKILL)
	if !waitGone(pid, 5*time.Second) {
		return fmt.Errorf("pid %d did not exit after SIGKILL", pid)
	}
	return nil
}

func waitGone(pid int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for running(pid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}

func commandIs(pid int, bin string) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	argv0, _, _ := bytes.Cut(data, []byte{0})
	return string(argv0) == bin
}

// ProcessRunning reports whether pid is a live process: it exists and is not a zombie. (A zombie
// has exited but not been reaped yet; where PID 1 reaps orphans late, `kill -0` still succeeds for
// it.) It reads /proc and so works on Linux only; elsewhere it falls back to signal 0.
func ProcessRunning(pid int) bool { return running(pid) }
