package main

import (
	"cmp"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"sluice.dev/sluice/test/managerproc"
)

// processCPU is the CPU time so far of every process the benchmark watches: the local cluster's
// components, the manager and the benchmark itself, by name.
type processCPU map[string]time.Duration

// benchmarkSelf names this process in processCPU.
const benchmarkSelf = "benchscale (tracking every run)"

// managerName names the manager in processCPU.
const managerName = "the manager"

// cpuNow reads the CPU time of each process in pids (name → PID) and of this process. A process
// that cannot be read (gone) is left out.
func cpuNow(pids map[string]int) processCPU {
	out := processCPU{}
	for name, pid := range pids {
		if st, err := managerproc.PIDStats(pid); err == nil {
			out[name] = st.CPU
		}
	}
	if st, err := managerproc.PIDStats(os.Getpid()); err == nil {
		out[benchmarkSelf] = st.CPU
	}
	return out
}

// cpuShare formats the CPU each process used between two readings, as cores over wall, busiest
// first, with the total against the machine's cores.
func cpuShare(before, after processCPU, wall time.Duration, cores int) string {
	type use struct {
		name  string
		cores float64
	}
	var uses []use
	total := 0.0
	for name, t := range after {
		c := (t - before[name]).Seconds() / wall.Seconds()
		uses = append(uses, use{name, c})
		total += c
	}
	slices.SortFunc(uses, func(a, b use) int {
		return cmp.Or(cmp.Compare(b.cores, a.cores), strings.Compare(a.name, b.name))
	})
	parts := make([]string, 0, len(uses))
	for _, u := range uses {
		parts = append(parts, fmt.Sprintf("%s %.2f", u.name, u.cores))
	}
	return fmt.Sprintf("%.2f of %d cores (%s)", total, cores, strings.Join(parts, ", "))
}
