package federation

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/http2"
)

// rawConnFrom opens a TCP connection from the loopback address from to addr
// that sends nothing.
func rawConnFrom(t *testing.T, addr, from string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 2 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// refusedWithin reports whether a connection from the loopback address from
// to addr is refused: reset while dialling, or closed within d.
func refusedWithin(addr, from string, d time.Duration) bool {
	dl := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 2 * time.Second}
	c, err := dl.Dial("tcp", addr)
	if err != nil {
		return errors.Is(err, syscall.ECONNRESET)
	}
	defer c.Close()
	return closedWithin(c, d)
}

// closedWithin reports whether the server closes c within d (a read
// returning EOF or a reset rather than timing out; the server's HTTP/2
// SETTINGS are read past).
func closedWithin(c net.Conn, d time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(d))
	buf := make([]byte, 1024)
	for {
		if _, err := c.Read(buf); err != nil {
			var ne net.Error
			return !(errors.As(err, &ne) && ne.Timeout())
		}
	}
}

// TestConnectRateLimit: a peer opening 20 connections at once with a
// burst of 5 (1/s) has 5 admitted and the rest closed at once (audited as
// conn_rate); a client whose connections authenticate gets its token back,
// so 6 fresh connections in a row from one address with a burst of 1 all
// serve their call.
func TestConnectRateLimit(t *testing.T) {
	addr, _, cl, logs := siegeServer(t, ConnLimits{ConnectRate: 1, ConnectBurst: 5}, GRPCServerConfig{})
	var conns []net.Conn
	refused := 0
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.3")}, Timeout: 2 * time.Second}
	for range 20 {
		c, err := d.Dial("tcp", addr)
		if errors.Is(err, syscall.ECONNRESET) { // reset by the server before the dial returned
			refused++
			continue
		} else if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c)
	}
	for _, c := range conns {
		if closedWithin(c, 150*time.Millisecond) {
			refused++
		}
	}
	t.Logf("20 connections at once, burst 5: %d refused, %d held", refused, cl.Open())
	if refused < 14 || refused > 15 {
		t.Fatalf("%d of 20 connections refused, want 15 (14 if a token was refilled meanwhile)", refused)
	}
	if !strings.Contains(logs.String(), "class="+AuditConnRate+" peer=127.0.0.3:") {
		t.Fatal("no conn_rate refusal in the audit log")
	}

	addr2, tok2, _, _ := siegeServer(t, ConnLimits{ConnectRate: 1e-3, ConnectBurst: 1}, GRPCServerConfig{})
	for i := range 6 {
		if d, err := probe(addr2, "127.0.0.4", tok2, nil); err != nil {
			t.Fatalf("fresh authenticated connection %d with a burst of 1: %v after %v", i, err, d)
		}
	}
}

// TestUnauthenticatedConnectionExpires: a connection that sends nothing is
// closed after UnauthenticatedTimeout (audited as conn_unauthenticated),
// while an authenticated one outlives it.
func TestUnauthenticatedConnectionExpires(t *testing.T) {
	addr, tok, cl, logs := siegeServer(t, ConnLimits{UnauthenticatedTimeout: 200 * time.Millisecond}, GRPCServerConfig{})
	c, err := dialFrom(addr, "127.0.0.1", tok, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.GetTask(ctx, "t", "alice"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if !closedWithin(rawConnFrom(t, addr, "127.0.0.8"), 3*time.Second) {
		t.Fatal("a silent connection still open after 3 s")
	}
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Fatalf("the silent connection was closed after %v, before its 200 ms", d)
	}
	if !strings.Contains(logs.String(), "class="+AuditConnUnauthenticated+" peer=127.0.0.8:") {
		t.Fatalf("no conn_unauthenticated record:\n%s", logs.String())
	}
	time.Sleep(100 * time.Millisecond)
	if n := cl.Open(); n != 1 {
		t.Fatalf("%d connections open, want the authenticated one", n)
	}
	if _, err := c.GetTask(ctx, "t", "alice"); err != nil {
		t.Fatal(err)
	}
}

// TestEvictionOrder drives ConnLimiter.admit with a controlled clock (burst
// 4, 1/s, 3 places): a newcomer displaces the oldest unauthenticated
// connection of peers that hold what they opened, never the connection of a
// newcomer admitted after them, even once their buckets have refilled (the
// newcomer spent a token, they did not); a peer that keeps reopening
// connections is displaced first; a peer holding more unauthenticated
// connections goes before one holding fewer; an authenticated connection
// never goes.
func TestEvictionOrder(t *testing.T) {
	t0 := time.Unix(1e9, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	newLimiter := func() *ConnLimiter {
		return NewConnLimiter(nil, ConnLimits{Max: 3, ConnectRate: 1, ConnectBurst: 4, Reserved: -1}, nil)
	}
	conn := func(peer string, port int) *limitedConn {
		return &limitedConn{peer: peerFromIP(netip.MustParseAddr(peer)), addr: peer + ":" + strconv.Itoa(port)}
	}
	admit := func(t *testing.T, l *ConnLimiter, c *limitedConn, now time.Time, wantVictim *limitedConn) {
		t.Helper()
		victim, class, reason := l.admit(c, now)
		if class != "" {
			t.Fatalf("%s refused at %v: %s %s", c.addr, now.Sub(t0), class, reason)
		}
		if victim != wantVictim {
			name := func(c *limitedConn) string {
				if c == nil {
					return "none"
				}
				return c.addr
			}
			t.Fatalf("%s admitted at %v displaced %s, want %s (%s)", c.addr, now.Sub(t0), name(victim), name(wantVictim), reason)
		}
	}

	t.Run("holders before a newcomer", func(t *testing.T) {
		l := newLimiter()
		a, b, c := conn("10.0.0.1", 1), conn("10.0.0.2", 1), conn("10.0.0.3", 1)
		admit(t, l, a, at(0), nil)
		admit(t, l, b, at(0.1), nil)
		admit(t, l, c, at(0.2), nil)
		h := conn("10.0.0.9", 1) // the honest newcomer, after the holders refilled
		admit(t, l, h, at(10), a)
		admit(t, l, conn("10.0.0.4", 1), at(10.01), b)
		admit(t, l, conn("10.0.0.5", 1), at(10.02), c)
		admit(t, l, conn("10.0.0.6", 1), at(10.03), h) // the newcomer goes only once it is the oldest
	})
	t.Run("a reconnecting peer first", func(t *testing.T) {
		l := newLimiter()
		old := conn("10.0.0.1", 1)
		admit(t, l, old, at(0), nil)
		admit(t, l, conn("10.0.0.2", 1), at(0.1), nil)
		var churn *limitedConn
		for i := range 4 { // 10.0.0.3 reopens its connection four times; each new one displaces its last
			c := conn("10.0.0.3", 10+i)
			want := churn // nil the first time: a place is free
			admit(t, l, c, at(1+0.01*float64(i)), want)
			churn = c
		}
		admit(t, l, conn("10.0.0.9", 1), at(1.1), churn)
		admit(t, l, conn("10.0.0.8", 1), at(1.2), old)
	})
	t.Run("the peer holding most", func(t *testing.T) {
		l := newLimiter()
		solo, m1, m2 := conn("10.0.0.1", 1), conn("10.0.0.2", 1), conn("10.0.0.2", 2)
		admit(t, l, solo, at(0), nil)
		admit(t, l, m1, at(0.1), nil)
		admit(t, l, m2, at(0.2), nil)
		admit(t, l, conn("10.0.0.9", 1), at(10), m1)
	})
	t.Run("authenticated clients holding one place each", func(t *testing.T) {
		l := newLimiter()
		a, b, c := conn("10.0.0.1", 1), conn("10.0.0.2", 1), conn("10.0.0.3", 1)
		admit(t, l, a, at(0), nil)
		admit(t, l, b, at(0.1), nil)
		admit(t, l, c, at(0.2), nil)
		l.authenticate(a.addr, "t/a", false, at(0.3))
		l.authenticate(c.addr, "t/c", false, at(0.3))
		admit(t, l, conn("10.0.0.9", 1), at(1), b)
		l.authenticate("10.0.0.9:1", "t/h", false, at(1))
		victim, class, reason := l.admit(conn("10.0.0.8", 1), at(2))
		if victim != nil || class != AuditConnPeerLimit {
			t.Fatalf("every place authenticated by a different client: displaced %v, class %q; want none, %s", victim, class, AuditConnPeerLimit)
		}
		if !strings.Contains(reason, "the most held by client t/a (1), t/c (1), t/h (1)") {
			t.Fatalf("the refusal does not name the client ids holding the places: %q", reason)
		}
	})
	t.Run("the client holding most places", func(t *testing.T) {
		// One token's three connections fill the server: a newcomer
		// displaces the least recently used of them, and then, holding two,
		// the client is displaced again before anyone holding one.
		l := newLimiter()
		a1, a2, a3 := conn("10.0.0.1", 1), conn("10.0.0.1", 2), conn("10.0.0.2", 1)
		admit(t, l, a1, at(0), nil)
		admit(t, l, a2, at(0.1), nil)
		admit(t, l, a3, at(0.2), nil)
		l.authenticate(a1.addr, "old/stolen", false, at(0.3))
		l.authenticate(a2.addr, "old/stolen", false, at(0.4))
		l.authenticate(a3.addr, "old/stolen", false, at(0.5))
		h := conn("10.0.0.9", 1)
		admit(t, l, h, at(1), a1)
		l.authenticate(h.addr, "t/alice", false, at(1))
		admit(t, l, conn("10.0.0.8", 1), at(2), a2)
		if top := l.TopClients(3); len(top) != 2 || top[0] != (ClientPlaces{"old/stolen", 1}) || top[1] != (ClientPlaces{"t/alice", 1}) {
			t.Fatalf("top clients %+v, want old/stolen and t/alice with one place each", top)
		}
	})
	t.Run("reserved places", func(t *testing.T) {
		// Every place authenticated by a different client: a newcomer takes
		// one of the Reserved places, where only the admin token
		// authenticates; once they are taken a newcomer displaces the
		// unauthenticated reserved connection.
		l := NewConnLimiter(nil, ConnLimits{Max: 2, ConnectRate: 1, ConnectBurst: 4, Reserved: 2}, nil)
		a, b := conn("10.0.0.1", 1), conn("10.0.0.2", 1)
		admit(t, l, a, at(0), nil)
		admit(t, l, b, at(0), nil)
		l.authenticate(a.addr, "t/a", false, at(0))
		l.authenticate(b.addr, "t/b", false, at(0))
		r1, r2 := conn("10.0.0.3", 1), conn("10.0.0.4", 1)
		admit(t, l, r1, at(1), nil)
		admit(t, l, r2, at(1.1), nil)
		if !r1.reserved || !r2.reserved || l.States().Reserved != 2 {
			t.Fatalf("newcomers not on reserved places: %+v", l.States())
		}
		l.authenticate(r1.addr, "t/c", false, at(1.2)) // a client token: stays unauthenticated
		l.authenticate(r2.addr, adminOwner, true, at(1.2))
		if r1.trusted.Load() || !r2.trusted.Load() {
			t.Fatalf("reserved places: client trusted %v, admin trusted %v; want false, true", r1.trusted.Load(), r2.trusted.Load())
		}
		admit(t, l, conn("10.0.0.5", 1), at(5), r1)
		if victim, class, _ := l.admit(conn("10.0.0.6", 1), at(6)); victim == nil || class != "" {
			t.Fatalf("the unauthenticated reserved newcomer should be displaced: %v %q", victim, class)
		}
	})
}

// TestUnauthenticatedBytesCapped: a connection that sends more than
// UnauthenticatedBytes (here 64 KiB of HTTP/2 WINDOW_UPDATE frames, which
// no budget counts) without authenticating is closed and audited, while an
// honest client's first call, a 480 kB Submit, passes on a fresh
// connection: its headers authenticate it before its body is read.
func TestUnauthenticatedBytesCapped(t *testing.T) {
	f := newFixture(t, CoordinatorConfig{})
	spec := testSpec("big", 60000, 2)
	spec.MaxThetaNorm = 1e6
	tok := f.create(t, spec, "alice", "bob")
	logs := &lockedBuffer{}
	addr, _ := limitedServer(t, f, ConnLimits{}, GRPCServerConfig{Audit: NewAuditLog(slogTo(logs), 1000, 1000)})

	c := rawConnFrom(t, addr, "127.0.0.11")
	go func() {
		fr := http2.NewFramer(c, c)
		c.Write([]byte(http2.ClientPreface))
		fr.WriteSettings()
		for range 6000 { // 13 bytes each: 78 kB
			if fr.WriteWindowUpdate(0, 1) != nil {
				return
			}
		}
	}()
	if !closedWithin(c, 5*time.Second) {
		t.Fatal("a connection that sent 78 kB without authenticating is still open")
	}
	eventually(t, "the audit record", func() bool {
		return strings.Contains(logs.String(), "class="+AuditConnUnauthenticated+" peer=127.0.0.11:") &&
			strings.Contains(logs.String(), "sent more than 65536 bytes without authenticating")
	})

	cl, err := dialFrom(addr, "127.0.0.12", tok["alice"], nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	theta := make([]float64, 60000)
	theta[0] = 1
	if _, err := cl.Submit(ctx, Submission{TaskID: "big", Round: 1, ClientID: "alice", Theta: theta}); err != nil {
		t.Fatalf("a 480 kB first call on a fresh connection: %v", err)
	}
}

// TestPeerKey: IPv4 addresses are peers one by one; IPv6 addresses by
// their /64 (one subscriber's prefix), so an attacker cannot become 2⁶⁴
// peers.
func TestPeerKey(t *testing.T) {
	for _, c := range []struct {
		addr net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.ParseIP("127.10.0.1"), Port: 5}, "127.10.0.1"},
		{&net.TCPAddr{IP: net.ParseIP("2001:db8:1:2:3:4:5:6"), Port: 5}, "2001:db8:1:2::/64"},
		{&net.TCPAddr{IP: net.ParseIP("2001:db8:1:2:ffff::1"), Port: 6}, "2001:db8:1:2::/64"},
		{&net.TCPAddr{IP: net.ParseIP("::ffff:10.0.0.1"), Port: 5}, "10.0.0.1"},
		{&net.UnixAddr{Name: "/run/fedirl.sock", Net: "unix"}, "/run/fedirl.sock"},
	} {
		if got := peerKey(c.addr); got != c.want {
			t.Errorf("peerKey(%v) = %q, want %q", c.addr, got, c.want)
		}
	}
}
