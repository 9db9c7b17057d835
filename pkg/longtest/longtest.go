// Package longtest tells a test whether to run its long variant.
//
// `go test ./...` runs every test at a size that keeps the whole suite near a
// minute on two cores; a few statistical and end-to-end tests have a long
// variant (more episodes, more seeds) with the same assertions. Setting the
// environment variable FEDIRL_LONG_TESTS=1 selects the long variants, as
// .ci/run does:
//
//	FEDIRL_LONG_TESTS=1 go test ./pkg/envs/lunar -run DistributionsMatchReference
//
// An environment variable rather than a test flag, because `go test ./...
// -long` fails in every package that does not define the flag.
package longtest

import "os"

// Var is the environment variable that selects the long variants.
const Var = "FEDIRL_LONG_TESTS"

// Enabled reports whether the long variants were asked for ($FEDIRL_LONG_TESTS
// set to anything but "", "0" or "false").
func Enabled() bool {
	switch os.Getenv(Var) {
	case "", "0", "false":
		return false
	}
	return true
}

// Pick returns long when the long variants were asked for, short otherwise.
func Pick[T any](short, long T) T {
	if Enabled() {
		return long
	}
	return short
}
