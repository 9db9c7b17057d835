// Package cpuclock reads the CPU time the current process has used, so that
// benchmarks can report work per CPU-second alongside wall time (which a
// shared machine inflates). It measures nothing else and keeps no state.
package cpuclock
