package main

import (
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/fedirl/fedirl/pkg/federation"
)

// servePprof serves Go's runtime profiles (net/http/pprof: /debug/pprof/,
// e.g. /debug/pprof/profile?seconds=10 for a CPU profile) on addr, which
// must be a loopback address: profiles expose the process's internals and
// a CPU profile costs a core's sampling, so they are never served beyond
// the machine. The server runs until the process exits; servePprof
// returns the address it listens on.
func servePprof(addr string, logger *log.Logger) (net.Addr, error) {
	if !federation.IsLoopback(addr) {
		return nil, fmt.Errorf("--pprof %q: profiles are only served on a loopback address (e.g. 127.0.0.1:6060)", addr)
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--pprof %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(lis)
	logger.Printf("profiles on http://%s/debug/pprof/", lis.Addr())
	return lis.Addr(), nil
}
