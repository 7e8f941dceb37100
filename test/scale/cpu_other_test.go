//go:build !linux

package scale

import "time"

// cpuTimes is only implemented on Linux.
func cpuTimes() (self, children time.Duration, ok bool) { return 0, 0, false }
