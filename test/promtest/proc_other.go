//go:build !linux

package promtest

import "syscall"

// sysProcAttr has no parent-death signal outside Linux: Stop (or StartT's cleanup) must run.
func sysProcAttr() *syscall.SysProcAttr { return nil }
