package federation

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/proto"

	pb "github.com/fedirl/fedirl/proto"
)

// This file is issue 53's siege with a stolen client token: before, one
// valid token of any client of any task made every connection that used it
// authenticated, never evicted and counted against no one, so 2,048 such
// connections locked out every honest client, health checker and the
// operator. The CI tests run the patterns at small scale.

// tokenUse is the stolen token of a token pattern and the client it
// names in its requests.
type tokenUse struct {
	token, task, client string
	streams             int // token-stall: Submit streams per connection
}

// tokenCalls plays the token patterns on a fresh connection: token-idle
// makes one complete GetTask and then only answers SETTINGS and PINGs;
// token-stall opens s.token.streams Submit calls whose request announces
// 1 MiB and never comes.
func (s *siege) tokenCalls(fr *http2.Framer, wmu *sync.Mutex) {
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	headers := func(method string) []byte {
		hb.Reset()
		for _, f := range []hpack.HeaderField{{Name: ":method", Value: "POST"}, {Name: ":scheme", Value: "http"},
			{Name: ":path", Value: method}, {Name: ":authority", Value: s.addr},
			{Name: "content-type", Value: "application/grpc"}, {Name: "te", Value: "trailers"},
			{Name: "authorization", Value: "Bearer " + s.token.token}} {
			enc.WriteField(f)
		}
		return bytes.Clone(hb.Bytes())
	}
	wmu.Lock()
	defer wmu.Unlock()
	if s.pattern == patternTokenIdle {
		req, _ := proto.Marshal(&pb.GetTaskRequest{TaskId: s.token.task, ClientId: s.token.client})
		msg := append([]byte{0, 0, 0, 0, byte(len(req))}, req...)
		if fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: headers(pb.Federation_GetTask_FullMethodName), EndHeaders: true}) == nil {
			fr.WriteData(1, true, msg)
		}
		return
	}
	for i := range s.token.streams {
		id := uint32(2*i + 1)
		if fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: headers(pb.Federation_Submit_FullMethodName), EndHeaders: true}) != nil {
			return
		}
		if fr.WriteData(id, false, []byte{0, 0, 0x10, 0, 0}) != nil {
			return
		}
	}
}

// tokenSiegeServer serves task "t" (clients alice, bob, mallory; quorum 3)
// and task "old" (client olduser; quorum 1, fused when done) with an admin
// token, behind a ConnLimiter with lim, and returns its address, the
// tokens by client, the admin token, the limiter and the audit log.
func tokenSiegeServer(t *testing.T, lim ConnLimits, cfg GRPCServerConfig, oldDone bool) (addr string, tok map[string]string, admin string, cl *ConnLimiter, logs *lockedBuffer) {
	t.Helper()
	admin = NewToken()
	f := newFixture(t, CoordinatorConfig{AdminToken: admin})
	tok = f.create(t, testSpec("t", 2, 3), "alice", "bob", "mallory")
	for k, v := range f.create(t, testSpec("old", 2, 1), "olduser") {
		tok[k] = v
	}
	if oldDone {
		if _, err := f.coord.Submit(context.Background(), Credentials{Token: tok["olduser"]}, sub("old", "olduser", 1, 1, 1)); err != nil {
			t.Fatal(err)
		}
		eventually(t, "task old fused", func() bool {
			st, err := f.coord.store.state("old")
			return err == nil && st.Done
		})
	}
	logs = &lockedBuffer{}
	if cfg.Audit == nil {
		cfg.Audit = NewAuditLog(slogTo(logs), 1000, 1000)
	}
	addr, cl = limitedServer(t, f, lim, cfg)
	return addr, tok, admin, cl, logs
}

// healthFrom runs one health Check on a fresh connection from from.
func healthFrom(addr, from string) error {
	c, err := dialFrom(addr, from, "", nil)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := healthpb.NewHealthClient(c.conn).Check(ctx, &healthpb.HealthCheckRequest{})
	if err == nil && r.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		err = fmt.Errorf("status %v", r.GetStatus())
	}
	return err
}

// statusFrom asks for the server's status with the admin token on a fresh
// connection from from.
func statusFrom(addr, from, admin string) error {
	c, err := dialFrom(addr, from, admin, nil)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = c.Status(ctx)
	return err
}

// TestSiegeStolenToken is issue 53's lock-out at CI scale: 200 connections
// against 100 places, from 8 addresses and from 200, each making one call
// with a stolen token and then holding its connection (reopened 20 ms after
// the server closes it). The token is of a client of another task (open,
// and already fused) and of the same task. Fresh honest GetTask+Submit
// calls (≥ 95 %), health Checks and the admin's status must get through,
// the stolen token must hold at most ConnLimits.PerClient authenticated
// places, and the audit log must name its client id.
func TestSiegeStolenToken(t *testing.T) {
	if testing.Short() {
		t.Skip("attack simulation")
	}
	for _, c := range []struct {
		name          string
		task, client  string
		oldDone       bool
		conns, addrs  int
		wantAuditName string
	}{
		{"other-task-8-addrs", "old", "olduser", false, 200, 8, "client old/olduser holds 4 authenticated connections"},
		{"other-task-200-addrs", "old", "olduser", false, 200, 200, "client old/olduser holds 4 authenticated connections"},
		{"fused-task-8-addrs", "old", "olduser", true, 200, 8, ""},
		{"same-task-8-addrs", "t", "mallory", false, 200, 8, "client t/mallory holds 4 authenticated connections"},
	} {
		t.Run(c.name, func(t *testing.T) {
			lim := ConnLimits{Max: 100, ConnectRate: 100.0 / float64(c.addrs)}
			addr, tok, admin, cl, logs := tokenSiegeServer(t, lim, GRPCServerConfig{}, c.oldDone)
			s := startSiege(t, addr, patternTokenIdle, c.conns, c.addrs, siegeOptions{reconnect: 20 * time.Millisecond,
				token: tokenUse{token: tok[c.client], task: c.task, client: c.client}})
			s.waitBurst(t, cl, c.addrs)
			ok, total := probeMany(t, addr, tok["alice"], nil, 10, "127.0.0.1", "127.9.9.9")
			requireServed(t, c.name, ok, total)
			// A health checker and the operator, each from an address of
			// its own that has not just spent its connection rate.
			checks, status := 0, 0
			for i := range 5 {
				if err := healthFrom(addr, fmt.Sprintf("127.0.8.%d", i+1)); err != nil {
					t.Logf("health Check: %v", err)
				} else {
					checks++
				}
				if err := statusFrom(addr, fmt.Sprintf("127.0.7.%d", i+1), admin); err != nil {
					t.Logf("admin status: %v", err)
				} else {
					status++
				}
			}
			if checks < 5 || status < 5 {
				t.Fatalf("under the siege %d/5 health Checks and %d/5 admin status calls answered, want all", checks, status)
			}
			key := ownerKey(c.task, c.client)
			for _, p := range cl.TopClients(10) {
				if p.Client == key && p.Places > cl.lim.PerClient {
					t.Fatalf("the stolen token holds %d authenticated places, limit %d", p.Places, cl.lim.PerClient)
				}
				if p.Client == key && c.oldDone {
					t.Fatalf("a token of a fused task holds %d authenticated places, want none", p.Places)
				}
			}
			if n := cl.Open(); n > lim.Max+DefaultReservedConnections {
				t.Fatalf("%d connections open, limit %d + %d reserved", n, lim.Max, DefaultReservedConnections)
			}
			if c.wantAuditName != "" && !strings.Contains(logs.String(), c.wantAuditName) {
				t.Fatalf("the audit log does not name the holding client (%q):\n%.4000s", c.wantAuditName, logs.String())
			}
			held, dials, closed := s.stats()
			t.Logf("attacker holds %d connections after %d dials (%d closed by the server); server: %+v", held, dials, closed, cl.States())
		})
	}
}

// TestSiegeStolenTokenStalledStreams: the same with 16 stalled Submit
// streams on each of the attacker's connections (before: RSS 22 → 545 MB
// at 2,048 connections). The client id's calls in flight are capped at
// MaxCallsPerClient, so the server holds at most that many of its requests.
func TestSiegeStolenTokenStalledStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("attack simulation")
	}
	lim := ConnLimits{Max: 100, ConnectRate: 100.0 / 8}
	addr, tok, admin, cl, logs := tokenSiegeServer(t, lim, GRPCServerConfig{}, false)
	before := heapInUse()
	s := startSiege(t, addr, patternTokenStall, 200, 8, siegeOptions{reconnect: 20 * time.Millisecond,
		token: tokenUse{token: tok["olduser"], task: "old", client: "olduser", streams: 16}})
	s.waitBurst(t, cl, 8)
	ok, total := probeMany(t, addr, tok["alice"], nil, 10, "127.0.0.1", "127.9.9.9")
	requireServed(t, "stalled Submit streams with a stolen token", ok, total)
	if err := healthFrom(addr, "127.0.0.1"); err != nil {
		t.Fatalf("health Check: %v", err)
	}
	if err := statusFrom(addr, "127.0.0.3", admin); err != nil {
		t.Fatalf("admin status: %v", err)
	}
	if !strings.Contains(logs.String(), "client old/olduser has 8 calls in flight, its limit") {
		t.Fatalf("no client_call_limit record naming the client:\n%.4000s", logs.String())
	}
	after := heapInUse()
	t.Logf("heap in use %d → %d kB", before>>10, after>>10)
	// 200 connections × 16 streams × 64 KiB windows could hold 200 MB;
	// capped, the heap grows by the connections' own buffers only.
	if after > before+64<<20 {
		t.Fatalf("heap in use grew from %d to %d MB under the stalled streams", before>>20, after>>20)
	}
}

// TestAuthenticatedPlacesPerClient: one client opening 6 connections, each
// with a call, holds PerClient (4) authenticated places; the other two are
// served but unauthenticated (evictable). A connection idle for
// AuthenticatedIdle counts as unauthenticated again, and its next call
// authenticates it again.
func TestAuthenticatedPlacesPerClient(t *testing.T) {
	addr, tok, cl, logs := siegeServer(t, ConnLimits{Max: 20, AuthenticatedIdle: 300 * time.Millisecond}, GRPCServerConfig{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var clients []*GRPCClient
	for range 6 {
		c, err := dialFrom(addr, "127.0.0.5", tok, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.GetTask(ctx, "t", "alice"); err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
	}
	st := cl.States()
	if st.Authenticated != DefaultMaxConnectionsPerClient || st.Unauthenticated != 6-DefaultMaxConnectionsPerClient {
		t.Fatalf("states %+v, want %d authenticated and %d not", st, DefaultMaxConnectionsPerClient, 6-DefaultMaxConnectionsPerClient)
	}
	if top := cl.TopClients(1); len(top) != 1 || top[0] != (ClientPlaces{"t/alice", DefaultMaxConnectionsPerClient}) {
		t.Fatalf("top clients %+v", top)
	}
	if !strings.Contains(logs.String(), "class="+AuditClientConnLimit) {
		t.Fatalf("no client_conn_limit record:\n%s", logs.String())
	}
	waitFor(t, "the idle connections to be demoted", func() bool { return cl.States().Authenticated == 0 })
	if _, err := clients[0].GetTask(ctx, "t", "alice"); err != nil {
		t.Fatal(err)
	}
	if st := cl.States(); st.Authenticated != 1 {
		t.Fatalf("after a call on an idle connection: %+v, want 1 authenticated", st)
	}
}

// TestReservedPlacesForAdminAndHealth: every one of the Max places held by
// a different client's authenticated connection (nobody to evict, nobody
// holding two): the admin's status and a health Check still get a
// reserved place; a client call on a reserved place is served but leaves
// it unauthenticated.
func TestReservedPlacesForAdminAndHealth(t *testing.T) {
	addr, tok, admin, cl, logs := tokenSiegeServer(t, ConnLimits{Max: 3}, GRPCServerConfig{}, false)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i, who := range []struct{ task, client string }{{"t", "alice"}, {"t", "bob"}, {"old", "olduser"}} {
		c, err := dialFrom(addr, fmt.Sprintf("127.0.6.%d", i+1), tok[who.client], nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.GetTask(ctx, who.task, who.client); err != nil {
			t.Fatal(err)
		}
	}
	if st := cl.States(); st.Authenticated != 3 || st.Unauthenticated != 0 {
		t.Fatalf("states %+v, want 3 authenticated", st)
	}
	if err := statusFrom(addr, "127.0.7.1", admin); err != nil {
		t.Fatalf("admin status with every place authenticated: %v", err)
	}
	if err := healthFrom(addr, "127.0.8.1"); err != nil {
		t.Fatalf("health Check with every place authenticated: %v", err)
	}
	m, err := dialFrom(addr, "127.0.6.9", tok["mallory"], nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, err := m.GetTask(ctx, "t", "mallory"); err != nil {
		t.Fatalf("a client call on a reserved place: %v", err)
	}
	for _, p := range cl.TopClients(10) {
		if p.Client == "t/mallory" {
			t.Fatalf("a client token authenticated a reserved place: %+v", cl.TopClients(10))
		}
	}
	if !strings.Contains(logs.String(), "class="+AuditReservedPlace) {
		t.Fatalf("no reserved_place record:\n%s", logs.String())
	}
}

// TestRevokeEndsAttack: the same-task siege of TestSiegeStolenToken, then
// the operator revokes the stolen token over the admin RPC. Within 1 s no
// connection is authenticated for the client any more, its calls are
// refused naming the revocation, and honest clients are served; the audit
// log names the client. Rotating issues a token that works while the old
// one is refused.
func TestRevokeEndsAttack(t *testing.T) {
	if testing.Short() {
		t.Skip("attack simulation")
	}
	lim := ConnLimits{Max: 100, ConnectRate: 100.0 / 8}
	addr, tok, admin, cl, logs := tokenSiegeServer(t, lim, GRPCServerConfig{}, false)
	s := startSiege(t, addr, patternTokenIdle, 200, 8, siegeOptions{reconnect: 20 * time.Millisecond,
		token: tokenUse{token: tok["mallory"], task: "t", client: "mallory"}})
	s.waitBurst(t, cl, 8)
	holds := func() int {
		for _, p := range cl.TopClients(100) {
			if p.Client == "t/mallory" {
				return p.Places
			}
		}
		return 0
	}
	waitFor(t, "the attacker to hold authenticated places", func() bool { return holds() > 0 })
	ac, err := dialFrom(addr, "127.0.7.1", admin, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ac.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	if _, closed, err := ac.RevokeToken(ctx, "t", "mallory", Revoke); err != nil || closed == 0 {
		t.Fatalf("RevokeToken: closed %d, %v", closed, err)
	}
	for holds() > 0 {
		if time.Since(start) > time.Second {
			t.Fatalf("1 s after the revocation the client still holds %d places", holds())
		}
		time.Sleep(5 * time.Millisecond)
	}
	m, err := dialFrom(addr, "127.0.6.9", tok["mallory"], nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	_, err = m.Submit(ctx, Submission{TaskID: "t", Round: 1, ClientID: "mallory", Theta: []float64{1, 1}})
	if CodeOf(err) != CodePermissionDenied || !strings.Contains(err.Error(), "revoked by the operator") {
		t.Fatalf("a revoked token's Submit: %v; want PermissionDenied naming the revocation", err)
	}
	t.Logf("revoked in %v", time.Since(start).Round(time.Millisecond))
	ok, total := probeMany(t, addr, tok["alice"], nil, 5, "127.0.0.1", "127.9.9.9")
	requireServed(t, "after the revocation", ok, total)
	if holds() > 0 {
		t.Fatalf("the revoked client holds %d places again", holds())
	}
	if !strings.Contains(logs.String(), "class="+AuditTokenRevoked) || !strings.Contains(logs.String(), "client t/mallory: token revoked by the admin") {
		t.Fatalf("the audit log does not record the revocation with the client id:\n%.3000s", logs.String())
	}
	// Rotation: bob's new token works, the old one is refused.
	newTok, _, err := ac.RevokeToken(ctx, "t", "bob", Rotate)
	if err != nil || len(newTok) != 64 {
		t.Fatalf("rotate: %q, %v", newTok, err)
	}
	for _, c := range []struct {
		token string
		ok    bool
	}{{tok["bob"], false}, {newTok, true}} {
		b, err := dialFrom(addr, "127.0.6.10", c.token, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = b.GetTask(ctx, "t", "bob")
		b.Close()
		if (err == nil) != c.ok || (!c.ok && CodeOf(err) != CodePermissionDenied) {
			t.Fatalf("bob's token after rotation (new %v): %v", c.ok, err)
		}
	}
}
