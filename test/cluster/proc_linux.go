package cluster

import (
	"bytes"
	"fmt"
	"os"
	"syscall"
)

func sysProcAttr(detached bool) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setpgid: true}
	if !detached {
		attr.Pdeathsig = syscall.SIGKILL
	}
	return attr
}

// running reads the state field of /proc/PID/stat: missing or Z (zombie) means not running.
func running(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The command name (field 2) is in parentheses and may contain spaces: the state follows the
	// last ')'.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 || i+2 >= len(data) {
		return false
	}
	state := data[i+2]
	return state != 'Z' && state != 'X'
}
