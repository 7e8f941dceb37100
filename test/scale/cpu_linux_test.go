package scale

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTick is USER_HZ, the unit of utime and stime in /proc/PID/stat (100 on every Linux ABI
// Go supports).
const clockTick = 10 * time.Millisecond

// cpuTimes returns the CPU time (user + system) of this test process and of its child processes
// (etcd and kube-apiserver); ok is false when /proc cannot be read.
func cpuTimes() (self, children time.Duration, ok bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0, false
	}
	self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	tasks, err := filepath.Glob("/proc/self/task/*/children")
	if err != nil || len(tasks) == 0 {
		return self, 0, false
	}
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, pid := range strings.Fields(string(b)) {
			stat, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
			if err != nil {
				continue
			}
			// Fields after the parenthesised command name; utime and stime are fields 14 and 15.
			s := string(stat)
			fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
			if len(fields) < 13 {
				continue
			}
			u, _ := strconv.ParseInt(fields[11], 10, 64)
			st, _ := strconv.ParseInt(fields[12], 10, 64)
			children += time.Duration(u+st) * clockTick
		}
	}
	return self, children, true
}
