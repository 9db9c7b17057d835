package federation

import (
	"crypto/tls"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/fedirl/fedirl/pkg/federation/fedtest"
)

// serverMemory returns the heap and goroutine stacks in use after two GCs.
func serverMemory() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapInuse + m.StackInuse
}

// BenchmarkUnauthenticatedConnMemory measures what one unauthenticated
// connection costs before admission, for the memory bound of
// README-federation ("Memory before admission"): 512 connections from 512
// loopback addresses hold each pattern against an in-process server with
// room for all, and the heap and stacks in use grow by B/conn (server and
// attacker together, so an upper estimate of the server's share): h2-stall
// (preface and SETTINGS only), tls-stall (65 bytes of a handshake record),
// check-body (a token-less health Check with 60 KiB of its announced 1 MiB
// request, the most request bytes an unauthenticated connection can send
// under UnauthenticatedBytes), and the last two over a completed TLS
// handshake. Run with -benchtime 1x.
func BenchmarkUnauthenticatedConnMemory(b *testing.B) {
	ca := fedtest.NewCA(b)
	serverCert := ca.Issue(b, "server", true)
	const n = 512
	for _, tc := range []struct {
		name, pattern string
		tls           bool
	}{
		{patternH2Stall, patternH2Stall, false}, {patternCheckBody, patternCheckBody, false},
		{patternTLSStall, patternTLSStall, true}, {"tls+" + patternH2Stall, patternH2Stall, true},
		{"tls+" + patternCheckBody, patternCheckBody, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var cfg GRPCServerConfig
			if tc.tls {
				cfg.TLS = &tls.Config{Certificates: []tls.Certificate{serverCert}}
			}
			pattern := tc.pattern
			var perConn float64
			for b.Loop() {
				store, err := OpenStore(filepath.Join(b.TempDir(), "store.db"))
				if err != nil {
					b.Fatal(err)
				}
				coord, err := NewCoordinator(store, CoordinatorConfig{Fuser: &meanFuser{}})
				if err != nil {
					b.Fatal(err)
				}
				addr, cl := limitedServer(b, &fixture{coord: coord}, ConnLimits{Max: 4 * n, ConnectBurst: 4 * n}, cfg)
				before := serverMemory()
				var o siegeOptions
				if tc.tls && pattern != patternTLSStall {
					o.tls = &tls.Config{RootCAs: ca.Pool, ServerName: "127.0.0.1", NextProtos: []string{"h2"}}
				}
				s := startSiege(b, addr, pattern, n, n, o)
				deadline := time.Now().Add(20 * time.Second)
				for cl.Open() < n && time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond)
				}
				time.Sleep(500 * time.Millisecond) // let the server read what was sent
				if held, _, _ := s.stats(); held < n || cl.Open() < n {
					b.Fatalf("%d connections held by the attacker, %d by the server; want %d", held, cl.Open(), n)
				}
				perConn += (float64(serverMemory()) - float64(before)) / n
				s.close()
				coord.Close()
				store.Close()
			}
			b.ReportMetric(perConn/float64(b.N), "B/conn")
		})
	}
}
