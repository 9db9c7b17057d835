//go:build unix

package irl

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user+system) used by this process so far;
// benchmarks report it per op because wall time is inflated on a shared machine.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
