//go:build !unix

package federation

import "time"

// processCPU is not measured here (see cputime_unix_test.go).
func processCPU() time.Duration { return -1 }
