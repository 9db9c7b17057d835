//go:build !unix

package cpuclock

import "time"

// ProcessCPU is not measured on this platform and returns 0.
func ProcessCPU() time.Duration { return 0 }
