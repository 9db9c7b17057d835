package main

import (
	"io"
	"log"
	"net/http"
	"strings"
	"testing"
)

// TestPprofLoopbackOnly: --pprof refuses an address beyond loopback
// (naming the flag) and serves the runtime's profiles on a loopback one.
func TestPprofLoopbackOnly(t *testing.T) {
	logger := log.New(io.Discard, "", 0)
	for _, addr := range []string{"0.0.0.0:6060", ":6060", "10.1.2.3:6060", "127.0.0.1"} {
		if _, err := servePprof(addr, logger); err == nil || !strings.Contains(err.Error(), "--pprof") {
			t.Errorf("--pprof %q: error %v, want a refusal naming --pprof", addr, err)
		}
	}
	a, err := servePprof("127.0.0.1:0", logger)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + a.String() + "/debug/pprof/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /debug/pprof/cmdline: %s", resp.Status)
	}
}
