package federation

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestListenerRefusalPath: 200 connections opened at once from 127.0.0.21
// with a burst of 1 (and a refill of one a thousand seconds) have one
// admitted and 199 reset by the listener (SO_LINGER 0: the client reads
// ECONNRESET, not EOF), all counted (Counts, and the Prometheus counter
// fedirl_listener_connections_total), never returned by Accept, and
// recorded within the audit log's rate: 5 records, the rest summed by
// class and peer in the next summary. Both paths: a TCP listener's on
// Linux, where connections are refused as bare descriptors before any
// net.Conn, and that of any other listener (here a TCP listener behind a
// wrapper), which screens the net.Conns of its Accept. Screening and
// counting a refused connection allocates nothing once the audit's rate
// is spent.
func TestListenerRefusalPath(t *testing.T) {
	for _, raw := range []bool{true, false} {
		t.Run(fmt.Sprintf("raw=%v", raw), func(t *testing.T) {
			if raw && runtime.GOOS != "linux" {
				t.Skip("the raw refusal path is Linux's")
			}
			lis, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			if !raw {
				lis = struct{ net.Listener }{lis} // not a *net.TCPListener
			}
			logs := &lockedBuffer{}
			audit := NewAuditLog(slogTo(logs), 1e-3, 5)
			cl := NewConnLimiter(lis, ConnLimits{ConnectRate: 1e-3, ConnectBurst: 1}, audit)
			defer cl.Close()
			if (cl.raw != nil) != raw {
				t.Fatalf("raw path %v, want %v", cl.raw != nil, raw)
			}
			var accepted atomic.Int64
			go func() {
				for {
					c, err := cl.Accept()
					if err != nil {
						return
					}
					accepted.Add(1)
					defer c.Close()
				}
			}()
			d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.21")}, Timeout: 2 * time.Second}
			var held []net.Conn
			resets := 0
			for range 200 {
				c, err := d.Dial("tcp", cl.Addr().String())
				if errors.Is(err, syscall.ECONNRESET) {
					resets++
					continue
				} else if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				held = append(held, c)
			}
			for _, c := range held {
				c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
				if _, err := c.Read(make([]byte, 1)); errors.Is(err, syscall.ECONNRESET) {
					resets++
				}
			}
			counts := cl.Counts()
			t.Logf("200 connections at once, burst 1: %d reset, %d accepted; counts %+v", resets, accepted.Load(), counts)
			if resets != 199 || counts.RefusedRate != 199 || counts.Admitted != 1 || accepted.Load() != 1 {
				t.Fatalf("%d connections reset, %d refused, %d admitted and %d accepted; want 199, 199, 1 and 1", resets, counts.RefusedRate, counts.Admitted, accepted.Load())
			}

			m, reg := NewMetrics(), prometheus.NewRegistry()
			m.CountConnections(cl)
			if err := m.Register(reg); err != nil {
				t.Fatal(err)
			}
			got := map[string]float64{}
			mfs, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			for _, mf := range mfs {
				if mf.GetName() == "fedirl_listener_connections_total" {
					for _, x := range mf.GetMetric() {
						got[x.GetLabel()[0].GetValue()] = x.GetCounter().GetValue()
					}
				}
			}
			if got["refused_rate"] != 199 || got["admitted"] != 1 {
				t.Fatalf("fedirl_listener_connections_total %v, want refused_rate 199 and admitted 1", got)
			}

			audit.Flush()
			records := strings.Count(logs.String(), "class="+AuditConnRate+" peer=127.0.0.21:")
			dropped := 0
			for _, m := range regexp.MustCompile(`by_class="`+AuditConnRate+`=(\d+)" top_peers="127\.0\.0\.21=(\d+)"`).FindAllStringSubmatch(logs.String(), -1) {
				n, _ := strconv.Atoi(m[1])
				if m[2] != m[1] {
					t.Errorf("summary counts %s records by class but %s by peer", m[1], m[2])
				}
				dropped += n
			}
			if records != 5 || records+dropped != 199 {
				t.Fatalf("audit log: %d records and %d dropped ones counted, want 5 and 194:\n%s", records, dropped, logs.String())
			}

			id, from := peerFromIP(netip.MustParseAddr("127.0.0.21")), netip.MustParseAddrPort("127.0.0.21:4000")
			if allocs := testing.AllocsPerRun(1000, func() {
				if ev := cl.screen(id, time.Now()); ev != connRefusedRate {
					t.Fatalf("screened as %d, want a rate refusal", ev)
				} else {
					cl.refused(ev, id, from, "")
				}
			}); allocs != 0 {
				t.Fatalf("screening and counting a refused connection allocates %v times, want 0", allocs)
			}
		})
	}
}

// TestDualStackPeers: on a dual-stack listener ([::]), an IPv4 client's
// connection is accounted under its IPv4 address and under the remote
// address gRPC will name (its RemoteAddr), by which a call's
// authentication finds it (markTrusted).
func TestDualStackPeers(t *testing.T) {
	lis, err := net.Listen("tcp", "[::]:0")
	if err != nil {
		t.Skipf("no dual-stack listener here: %v", err)
	}
	cl := NewConnLimiter(lis, ConnLimits{}, nil)
	defer cl.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		if c, err := cl.Accept(); err == nil {
			accepted <- c
		}
	}()
	_, port, _ := net.SplitHostPort(lis.Addr().String())
	c, err := net.Dial("tcp4", "127.0.0.1:"+port)
	if err != nil {
		t.Skipf("cannot reach the dual-stack listener over IPv4: %v", err)
	}
	defer c.Close()
	sc := <-accepted
	defer sc.Close()
	lc := sc.(*limitedConn)
	if got := lc.peer.String(); got != "127.0.0.1" {
		t.Fatalf("peer %q, want 127.0.0.1", got)
	}
	cl.authenticate(sc.RemoteAddr().String(), "t/alice", false, time.Now())
	if !lc.trusted.Load() || cl.Unauthenticated() != 0 {
		t.Fatalf("markTrusted(%q) did not find the connection accounted as %q", sc.RemoteAddr(), lc.addr)
	}
}

// TestVictimSampling: with more peers than victimSample, a newcomer's
// victim is drawn from a sample, and still one of the oldest: 1,000
// unauthenticated connections from 1,000 peers, then 900 newcomers from
// fresh peers, each displacing one. Every victim is older than half of the
// connections left (the oldest of 32 draws is younger than the median with
// probability 2⁻³²), and the first newcomer, which needs 999 evictions to
// become the oldest, is never displaced by the 900 that follow it.
func TestVictimSampling(t *testing.T) {
	t0 := time.Unix(1e9, 0)
	l := NewConnLimiter(nil, ConnLimits{Max: 1000, ConnectRate: 1, ConnectBurst: 4}, nil)
	conn := func(a, b, i int) *limitedConn {
		ip := netip.AddrFrom4([4]byte{10, byte(a), byte(i / 250), byte(i%250 + 1)})
		return &limitedConn{peer: peerFromIP(ip), addr: ip.String() + ":1"}
	}
	for i := range 1000 {
		if v, class, _ := l.admit(conn(1, 0, i), t0.Add(time.Duration(i)*time.Millisecond)); v != nil || class != "" {
			t.Fatalf("holder %d: displaced %v, refused %q", i, v, class)
		}
	}
	first := conn(2, 0, 0)
	for k := range 901 {
		c := first
		if k > 0 {
			c = conn(2, 0, k)
		}
		v, class, reason := l.admit(c, t0.Add(10*time.Second+time.Duration(k)*time.Millisecond))
		if v == nil || class != "" {
			t.Fatalf("newcomer %d: displaced nothing, refused %q %s", k, class, reason)
		}
		if v == first {
			t.Fatalf("newcomer %d displaced the first newcomer, younger than %d of the connections held", k, 1000-k)
		}
		older := 0
		for _, c := range l.byAddr {
			if c.since.Before(v.since) {
				older++
			}
		}
		if older >= 500 {
			t.Fatalf("newcomer %d displaced a connection younger than %d of the 999 others", k, older)
		}
	}
}

// BenchmarkConnAdmit measures a ConnLimiter's admission of a newcomer
// into a full server, as under the 16,000-over-4,096 siege: 2,048 places
// held by unauthenticated connections, newcomers from 4,096 peers in turn
// at 4,096 a second (each peer at its connection rate), each displacing
// a victim. Before victims were sampled (victimSample), choosing one
// scanned every peer.
func BenchmarkConnAdmit(b *testing.B) {
	const peers = 4096
	l := NewConnLimiter(nil, ConnLimits{Max: 2048}, nil)
	now := time.Unix(1e9, 0)
	conns := make([]*limitedConn, peers)
	for i := range conns {
		ip := siegeAddr(i).String()
		conns[i] = &limitedConn{peer: peerOf(&net.TCPAddr{IP: siegeAddr(i)}), addr: ip + ":1"}
	}
	evicted, cpu0 := 0, processCPU()
	for i := 0; b.Loop(); i++ {
		now = now.Add(time.Second / peers)
		c := conns[i%peers]
		l.release(c) // its last connection, if still held
		c.trusted.Store(false)
		v, class, _ := l.admit(c, now)
		if class != "" {
			b.Fatalf("admission %d refused: %s", i, class)
		}
		if v != nil {
			evicted++
		}
	}
	b.ReportMetric(float64(evicted)/float64(b.N), "evictions/op")
	if cpu0 >= 0 {
		b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
	}
}
