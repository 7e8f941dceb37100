//go:build unix && !linux

package cluster

import "syscall"

// Outside Linux there is no Pdeathsig: children of a parent that dies without Stop keep running.
func sysProcAttr(bool) *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

func running(pid int) bool { return syscall.Kill(pid, 0) == nil }
