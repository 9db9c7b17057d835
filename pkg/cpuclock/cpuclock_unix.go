//go:build unix

package cpuclock

import (
	"syscall"
	"time"
)

// ProcessCPU returns the CPU time (user+system) this process has used so far;
// benchmarks report it per op because wall time is inflated on a shared machine.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
