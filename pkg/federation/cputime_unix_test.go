//go:build unix

package federation

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user and system) the test process has
// used: a benchmark's per-operation cost on a machine shared with other
// jobs, where wall time measures the machine.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return -1
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
