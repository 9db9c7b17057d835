package federation

import (
	"errors"
	"math/rand/v2"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultMaxConnections is the default of ConnLimits.Max.
const DefaultMaxConnections = 2048

// DefaultMaxConnectionsPerPeer is the default of ConnLimits.PerPeer: the
// connections one IP address may hold at once. Raise it when many clients
// share one address (a NAT); eviction of unauthenticated connections still
// keeps a place for every newcomer.
const DefaultMaxConnectionsPerPeer = 256

// Defaults of the per-peer connection rate and of the lifetime of a
// connection that never authenticates (ConnLimits).
const (
	DefaultConnectRate            = 1
	DefaultConnectBurst           = 4
	DefaultUnauthenticatedTimeout = 30 * time.Second
	DefaultUnauthenticatedBytes   = 64 << 10
)

// Defaults of the per-client accounting of authenticated connections
// (ConnLimits, conns_client.go).
const (
	// DefaultMaxConnectionsPerClient is the default of ConnLimits.PerClient:
	// the authenticated connections one client id (of one task, or the
	// admin token) holds at once. fedirl client uses one connection; a
	// restarted client reconnects while the server may still hold its old
	// one.
	DefaultMaxConnectionsPerClient = 4
	// DefaultAuthenticatedIdle is the default of ConnLimits.AuthenticatedIdle.
	DefaultAuthenticatedIdle = time.Minute
	// DefaultReservedConnections is the default of ConnLimits.Reserved.
	DefaultReservedConnections = 8
)

// ConnLimits bounds the connections a server holds. Zero values are the
// documented defaults.
type ConnLimits struct {
	// Max is the number of connections held at once (default
	// DefaultMaxConnections).
	Max int
	// PerPeer is the number one peer may hold at once (default
	// DefaultMaxConnectionsPerPeer, at most Max).
	PerPeer int
	// ConnectRate and ConnectBurst bound how fast one peer may open
	// connections that do not authenticate (and so start TLS handshakes):
	// a token bucket of ConnectBurst connections refilled at ConnectRate
	// per second (defaults DefaultConnectRate, DefaultConnectBurst). A
	// connection over the rate is closed at once; one that authenticates
	// gives its token back, so clients, even many behind one address,
	// are limited only in how many connect at the same instant.
	ConnectRate  float64
	ConnectBurst int
	// UnauthenticatedTimeout is how long a connection may stay open
	// without authenticating (default DefaultUnauthenticatedTimeout): one
	// that has neither started a call with a known token nor, under mutual
	// TLS, completed its handshake with a verified certificate by then is
	// closed.
	UnauthenticatedTimeout time.Duration
	// UnauthenticatedBytes is how much a connection may send before it
	// authenticates (default DefaultUnauthenticatedBytes): TLS handshake,
	// HTTP/2 preface and frames, and the requests of token-less calls such
	// as health Checks. One that sends more is closed, so nothing an
	// unauthenticated peer sends can make the server hold more than this
	// per connection (plus HPACK's expansion into at most one header list
	// of MaxHeaderListBytes and a 4 KiB dynamic table). An honest client
	// authenticates with its first call's headers, after a few KiB.
	UnauthenticatedBytes int64
	// PerClient is the number of authenticated connections one client id
	// may hold at once (default DefaultMaxConnectionsPerClient): calls on
	// its further connections are served, but those stay unauthenticated
	// (evictable, expiring), so a stolen token holds at most PerClient
	// places however many connections it opens.
	PerClient int
	// AuthenticatedIdle is how long an authenticated connection may go
	// without a call in flight before it counts as unauthenticated again
	// (evictable and expiring; default DefaultAuthenticatedIdle). Its next
	// call authenticates it again.
	AuthenticatedIdle time.Duration
	// Reserved is the number of places beyond Max (default
	// DefaultReservedConnections) that a newcomer takes when every one of
	// the Max places is authenticated and no client holds more than one. A
	// reserved connection is authenticated only by the admin token; any
	// other call on it is served but leaves it unauthenticated (evictable),
	// so the admin's status and health Checks always find a place. A
	// negative value reserves none.
	Reserved int
}

// WithDefaults returns l with every zero field set to its default.
func (l ConnLimits) WithDefaults() ConnLimits {
	if l.Max <= 0 {
		l.Max = DefaultMaxConnections
	}
	if l.PerPeer <= 0 {
		l.PerPeer = DefaultMaxConnectionsPerPeer
	}
	l.PerPeer = min(l.PerPeer, l.Max)
	if l.ConnectRate <= 0 {
		l.ConnectRate = DefaultConnectRate
	}
	if l.ConnectBurst <= 0 {
		l.ConnectBurst = DefaultConnectBurst
	}
	if l.UnauthenticatedTimeout <= 0 {
		l.UnauthenticatedTimeout = DefaultUnauthenticatedTimeout
	}
	if l.UnauthenticatedBytes <= 0 {
		l.UnauthenticatedBytes = DefaultUnauthenticatedBytes
	}
	if l.PerClient <= 0 {
		l.PerClient = DefaultMaxConnectionsPerClient
	}
	if l.AuthenticatedIdle <= 0 {
		l.AuthenticatedIdle = DefaultAuthenticatedIdle
	}
	switch {
	case l.Reserved == 0:
		l.Reserved = DefaultReservedConnections
	case l.Reserved < 0:
		l.Reserved = 0
	}
	return l
}

// ConnLimiter is a net.Listener that accounts connections per peer instead
// of letting peers queue in the kernel's backlog. A peer is an IPv4 address
// or an IPv6 /64 prefix (what one host or subscriber typically holds).
//
//   - A peer opening connections faster than ConnectRate (after a burst of
//     ConnectBurst) has them closed at once.
//   - A peer at its PerPeer share has further connections closed at once.
//   - When Max connections are open, a newcomer takes the place of an
//     unauthenticated connection: the oldest of the peer that spent most
//     of its connection rate, then holding the most unauthenticated
//     connections (victimLocked).
//     An authenticated connection (one that started a call with the admin
//     token or a client token of an open task, or under mutual TLS
//     completed its handshake with a verified certificate) is counted
//     against its client id, which holds at most PerClient of them; it
//     counts as unauthenticated again after AuthenticatedIdle without a
//     call. When every place is authenticated, the newcomer displaces the
//     least recently used connection of the client id holding the most
//     places (if it holds more than one), or else takes one of the
//     Reserved places kept for the admin token and health Checks; only
//     when those are authenticated too is it closed (conns_client.go).
//   - A connection still unauthenticated after UnauthenticatedTimeout is
//     closed.
//
// Accept therefore never blocks on the limit: stalled or idle peers, from
// one address or thousands, hold places only until a newcomer needs one,
// and a newcomer keeps its place for as long as the attacker needs to cycle
// through every unauthenticated place older than it. Every refusal,
// eviction and expiry is counted (Counts) and goes to the rate-limited
// audit log.
//
// Refusing is cheap, since a flood of refused connections competes with
// honest clients for the accept loop: on Linux, a TCP listener's
// connections are accepted as bare descriptors (accept4), screened by
// their peer's address (connection rate, per-peer share, a place), and a
// refused one is reset (SO_LINGER 0) and closed at once, before the
// runtime's poller, TLS or HTTP/2 see it: two system calls, no goroutine,
// no allocation beyond the peer's address, and an audit record only
// within the audit log's rate (its reason text built only then). A newcomer
// that needs a place displaces a victim chosen among at most victimSample
// peers, so admitting costs the same with 2,048 peers as with 3.
//
// netutil.LimitListener, used before, blocks Accept when full, which lets
// one peer lock every other out; grpc-go offers no per-peer accounting, so
// this type is hand-written (and so is its token bucket, since
// golang.org/x/time/rate cannot give a token back).
type ConnLimiter struct {
	net.Listener
	lim   ConnLimits
	audit *AuditLog
	raw   *rawAcceptor // nil: connections come from Listener.Accept

	mu        sync.Mutex
	peers     map[peerID]*peerConns
	byAddr    map[string]*limitedConn // by remote address
	open      int
	rates     map[peerID]*bucket // by peer; pruned once refilled and holding no connection
	lastPrune time.Time
	cands     []*peerConns            // peers holding unauthenticated connections, each at its idx
	rng       *rand.Rand              // samples cands when there are more than victimSample
	clients   map[string]*clientConns // authenticated connections by client id
	multi     []*clientConns          // clients holding two or more, each at its idx
	reserved  int                     // connections on Reserved places

	counts [numConnEvents]atomic.Uint64
}

// victimSample is the most peers a newcomer's victim is chosen among:
// every candidate when there are at most this many (exactly the order of
// victimLocked), otherwise this many drawn at random (with replacement,
// from a fixed-seed source), so that admitting a newcomer costs O(1)
// rather than a scan of every peer (143.6 µs of CPU per admission at
// 2,048 peers, 0.59 of a core at 4,096 evictions a second; 3.5 µs
// sampled: BenchmarkConnAdmit). A newcomer is evicted only
// once it is the oldest of a sample of peers that spent as little of
// their connection rate as it did.
const victimSample = 32

// victimSeed seeds the victim sampling (determinism: a rerun of the same
// accept sequence evicts the same connections).
const victimSeed = 35

// connEvent is what happened to a connection at the listener.
type connEvent uint8

const (
	connAdmitted         connEvent = iota // handed to the server
	connRefusedRate                       // its peer connects faster than ConnectRate
	connRefusedPeerLimit                  // its peer holds PerPeer connections
	connRefusedFull                       // every place is authenticated
	connEvicted                           // closed to admit a newcomer
	connExpired                           // not authenticated within UnauthenticatedTimeout
	connTooManyBytes                      // sent more than UnauthenticatedBytes unauthenticated
	numConnEvents
)

// ConnCounts are a ConnLimiter's totals since it started: the aggregate
// record of every refusal, which the rate-limited audit log samples.
type ConnCounts struct {
	Admitted         uint64 // connections handed to the server
	RefusedRate      uint64 // refused: the peer connects faster than ConnectRate (audit class conn_rate)
	RefusedPeerLimit uint64 // refused: the peer holds PerPeer connections (conn_peer_limit)
	RefusedFull      uint64 // refused: every place authenticated (conn_peer_limit)
	Evicted          uint64 // unauthenticated, closed to admit a newcomer (conn_evicted)
	Expired          uint64 // closed: not authenticated within UnauthenticatedTimeout (conn_unauthenticated)
	TooManyBytes     uint64 // closed: sent more than UnauthenticatedBytes unauthenticated (conn_unauthenticated)
}

// Counts returns the limiter's totals.
func (l *ConnLimiter) Counts() ConnCounts {
	c := func(e connEvent) uint64 { return l.counts[e].Load() }
	return ConnCounts{Admitted: c(connAdmitted), RefusedRate: c(connRefusedRate), RefusedPeerLimit: c(connRefusedPeerLimit),
		RefusedFull: c(connRefusedFull), Evicted: c(connEvicted), Expired: c(connExpired), TooManyBytes: c(connTooManyBytes)}
}

// peerConns is what a ConnLimiter holds of one peer.
type peerConns struct {
	id              peerID
	rate            *bucket        // the peer's connection rate (ConnLimiter.rates[id])
	conns           []*limitedConn // oldest first
	unauthenticated int
	idx             int // position in ConnLimiter.cands while unauthenticated > 0
}

// NewConnLimiter wraps lis with the limits lim; refusals and evictions are
// recorded in audit (nil: not recorded). On Linux a *net.TCPListener's
// connections are screened before they become net.Conns (see
// ConnLimiter); any other listener is served through its Accept. Close
// the limiter rather than lis: on Linux it holds a duplicate of lis's
// descriptor, which keeps the socket listening.
func NewConnLimiter(lis net.Listener, lim ConnLimits, audit *AuditLog) *ConnLimiter {
	return &ConnLimiter{Listener: lis, lim: lim.WithDefaults(), audit: audit, raw: newRawAcceptor(lis), peers: map[peerID]*peerConns{},
		byAddr: map[string]*limitedConn{}, rates: map[peerID]*bucket{}, rng: rand.New(rand.NewPCG(victimSeed, victimSeed)),
		clients: map[string]*clientConns{}}
}

// limitedConn is a connection accounted by a ConnLimiter.
type limitedConn struct {
	net.Conn
	l       *ConnLimiter
	peer    peerID
	addr    string
	since   time.Time   // admitted at
	trusted atomic.Bool // authenticated: counted against owner, evicted only as its client's
	expiry  *time.Timer // closes it if still unauthenticated
	read    int64       // bytes read while unauthenticated (by the one reader at a time)
	once    sync.Once

	// Guarded by l.mu:
	owner    string      // the client id it is authenticated for ("" while unauthenticated)
	reserved bool        // on one of the Reserved places
	inflight int         // calls in flight on it
	lastCall time.Time   // when its last call ended (or it authenticated)
	idle     *time.Timer // demotes it after AuthenticatedIdle without a call
}

// errUnauthenticatedBytes is returned by the Read of a connection that sent
// more than ConnLimits.UnauthenticatedBytes without authenticating.
var errUnauthenticatedBytes = errors.New("connection sent too much before authenticating")

// Read implements net.Conn, closing the connection once it has sent more
// than UnauthenticatedBytes without authenticating.
func (c *limitedConn) Read(p []byte) (int, error) {
	if c.trusted.Load() {
		return c.Conn.Read(p)
	}
	limit := c.l.lim.UnauthenticatedBytes
	if c.read > limit {
		return 0, errUnauthenticatedBytes
	}
	n, err := c.Conn.Read(p[:min(int64(len(p)), limit+1-c.read)])
	if c.read += int64(n); c.read > limit && !c.trusted.Load() {
		c.l.counts[connTooManyBytes].Add(1)
		c.l.audit.Refused(AuditConnUnauthenticated, c.addr, "", "sent more than "+strconv.FormatInt(limit, 10)+" bytes without authenticating (--unauthenticated-bytes)")
		c.Close()
		return 0, errUnauthenticatedBytes
	}
	return n, err
}

// Close releases the connection's place.
func (c *limitedConn) Close() error {
	c.once.Do(func() {
		if c.expiry != nil {
			c.expiry.Stop()
		}
		c.l.release(c)
	})
	return c.Conn.Close()
}

// Accept returns the next connection that fits the limits, closing those
// that do not (and evicting where a newcomer needs a place).
func (l *ConnLimiter) Accept() (net.Conn, error) {
	for {
		if l.raw != nil {
			c, err := l.acceptRaw()
			if c != nil || err != nil {
				return c, err
			}
			continue
		}
		raw, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		c := &limitedConn{Conn: raw, l: l, peer: peerOf(raw.RemoteAddr()), addr: raw.RemoteAddr().String()}
		now := time.Now()
		if ev := l.screen(c.peer, now); ev != connAdmitted {
			l.refused(ev, c.peer, netip.AddrPort{}, c.addr) // recorded before the peer can see the reset
			resetClose(raw)
			continue
		}
		if l.place(c, now) {
			return c, nil
		}
	}
}

// Close closes the listener.
func (l *ConnLimiter) Close() error {
	if l.raw != nil {
		l.raw.close()
	}
	return l.Listener.Close()
}

// acceptRaw accepts one connection as a bare descriptor and screens it
// (ConnLimiter): a refused one is reset and closed before it becomes a
// net.Conn, and acceptRaw returns (nil, nil).
func (l *ConnLimiter) acceptRaw() (net.Conn, error) {
	fd, from, err := l.raw.accept()
	if err != nil {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Addr: l.Addr(), Err: err}
	}
	id, now := peerFromIP(from.Addr()), time.Now()
	if ev := l.screen(id, now); ev != connAdmitted {
		l.refused(ev, id, from, "") // recorded before the peer can see the reset
		l.raw.refuse(fd)
		return nil, nil
	}
	conn, err := l.raw.conn(fd)
	if err != nil { // the peer is gone already (reset before we got to it)
		l.mu.Lock()
		l.refundLocked(id)
		l.mu.Unlock()
		return nil, nil
	}
	// The address as gRPC's peer.Addr names it, which markTrusted looks up.
	c := &limitedConn{Conn: conn, l: l, peer: id, addr: conn.RemoteAddr().String()}
	if l.place(c, now) {
		return c, nil
	}
	return nil, nil
}

// resetClose closes a refused connection with a reset rather than a FIN:
// under a flood of refused connections no TIME_WAIT socket is left behind.
func resetClose(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}

// screen takes a token of peer's connection rate and checks that the peer
// is under its share and that a place is free or can be freed, returning
// connAdmitted or why the connection is refused (its token then given
// back, unless it was the rate).
func (l *ConnLimiter) screen(peer peerID, now time.Time) connEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.screenLocked(peer, now)
}

func (l *ConnLimiter) screenLocked(peer peerID, now time.Time) connEvent {
	if !l.allowLocked(peer, now) {
		return connRefusedRate
	}
	if p := l.peers[peer]; p != nil && len(p.conns) >= l.lim.PerPeer {
		l.refundLocked(peer) // refused: the token is not spent
		return connRefusedPeerLimit
	}
	if !l.roomLocked() {
		l.refundLocked(peer)
		return connRefusedFull
	}
	return connAdmitted
}

// place accounts c, screened already, evicting a victim if the server is
// full, and arms its expiry; it reports false, having closed c, if c no
// longer fits (its peer or the server filled up meanwhile).
func (l *ConnLimiter) place(c *limitedConn, now time.Time) bool {
	l.mu.Lock()
	victim, ev, reason := l.placeLocked(c, now)
	l.mu.Unlock()
	if victim != nil {
		l.counts[connEvicted].Add(1)
		if reason != "" {
			l.audit.write(AuditConnEvicted, victim.addr, "", "closed to admit "+c.addr+": "+reason)
		}
		victim.Close()
	}
	if ev != connAdmitted {
		l.refused(ev, c.peer, netip.AddrPort{}, c.addr)
		resetClose(c.Conn)
		return false
	}
	l.counts[connAdmitted].Add(1)
	c.expiry = time.AfterFunc(l.lim.UnauthenticatedTimeout, func() {
		if !c.trusted.Load() {
			l.counts[connExpired].Add(1)
			l.audit.Refused(AuditConnUnauthenticated, c.addr, "", "no authenticated call within "+l.lim.UnauthenticatedTimeout.String())
			c.Close()
		}
	})
	return true
}

// placeLocked accounts c (screened already) if it still fits, returning
// the connection evicted for it and, if the audit log will record the
// eviction, why; or why c is refused (with a nil victim).
func (l *ConnLimiter) placeLocked(c *limitedConn, now time.Time) (victim *limitedConn, ev connEvent, reason string) {
	p := l.peers[c.peer]
	if p != nil && len(p.conns) >= l.lim.PerPeer {
		l.refundLocked(c.peer)
		return nil, connRefusedPeerLimit, ""
	}
	if l.open-l.reserved >= l.lim.Max {
		victim = l.victimLocked(now)
		if victim != nil && victim.reserved && l.reserved < l.lim.Reserved {
			victim = nil // a free reserved place before a reserved connection
			c.reserved = true
		} else if victim != nil {
			if l.audit.allow(AuditConnEvicted, victim.peer) {
				reason = "peer " + victim.peer.String() + " held " + strconv.Itoa(l.peers[victim.peer].unauthenticated) + " unauthenticated connections, " +
					strconv.Itoa(int(l.tokensLocked(victim.peer, now))) + " connection tokens left"
			}
		} else if victim = l.topHolderVictimLocked(); victim != nil {
			if l.audit.allow(AuditConnEvicted, victim.peer) {
				reason = "every place authenticated; client " + victim.owner + " held " + strconv.Itoa(len(l.clients[victim.owner].conns)) +
					" places, the most; its least recently used connection (peer " + victim.peer.String() + ") closed"
			}
		} else if l.reserved < l.lim.Reserved {
			c.reserved = true
		} else {
			l.refundLocked(c.peer)
			return nil, connRefusedFull, ""
		}
		if victim != nil {
			c.reserved = victim.reserved
			l.removeLocked(victim)
		}
	}
	if p = l.peers[c.peer]; p == nil {
		p = &peerConns{id: c.peer, rate: l.rates[c.peer], idx: -1}
		if p.rate == nil { // screened without a bucket: only by a caller that skipped screen
			p.rate = &bucket{tokens: float64(l.lim.ConnectBurst), last: now}
			l.rates[c.peer] = p.rate
		}
		l.peers[c.peer] = p
	}
	p.conns = append(p.conns, c)
	l.unauthLocked(p, +1)
	c.since = now
	l.byAddr[c.addr] = c
	l.open++
	if c.reserved {
		l.reserved++
	}
	return victim, connAdmitted, reason
}

// admit screens and places c in one step (as Accept does, without its
// sockets), returning a connection to evict for it and why, or the audit
// class and reason it is refused (with a nil victim).
func (l *ConnLimiter) admit(c *limitedConn, now time.Time) (victim *limitedConn, class, reason string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ev := l.screenLocked(c.peer, now)
	if ev == connAdmitted {
		victim, ev, reason = l.placeLocked(c, now)
	}
	if ev != connAdmitted {
		return nil, refusalClass[ev], l.refusalReason(ev)
	}
	return victim, "", reason
}

// refusalClass is the audit class of each refusal.
var refusalClass = [numConnEvents]string{connRefusedRate: AuditConnRate, connRefusedPeerLimit: AuditConnPeerLimit, connRefusedFull: AuditConnPeerLimit}

// refusalReason is the audit reason of a refusal.
func (l *ConnLimiter) refusalReason(ev connEvent) string {
	switch ev {
	case connRefusedRate:
		return "peer opens connections faster than " + strconv.FormatFloat(l.lim.ConnectRate, 'g', -1, 64) +
			"/s after a burst of " + strconv.Itoa(l.lim.ConnectBurst) + " (--peer-connect-rate, --peer-connect-burst)"
	case connRefusedPeerLimit:
		return "peer holds " + strconv.Itoa(l.lim.PerPeer) + " connections, its limit (--max-connections-per-peer)"
	case connRefusedFull:
		return "server holds " + strconv.Itoa(l.lim.Max) + " connections (--max-connections) and " + strconv.Itoa(l.reserved) +
			" reserved, every one authenticated and no client holding more than one; " + l.topClientsLocked(3)
	}
	return ""
}

// refused counts a refusal by peer (remote address from, or addr when
// from is not an IP address) and records it in the audit log within its
// rate, building the record's text only then.
func (l *ConnLimiter) refused(ev connEvent, peer peerID, from netip.AddrPort, addr string) {
	l.counts[ev].Add(1)
	if !l.audit.allow(refusalClass[ev], peer) {
		return
	}
	if addr == "" {
		addr = from.String()
	}
	l.audit.write(refusalClass[ev], addr, "", l.refusalReason(ev))
}

// victimLocked returns the unauthenticated connection a newcomer displaces
// (nil if every connection is authenticated): the oldest of the peer that
// spent most of its connection rate on connections it no longer holds,
// then holding the most unauthenticated connections, then the oldest,
// among every peer holding an unauthenticated connection, or among
// victimSample of them drawn at random when there are more. A peer that
// keeps reconnecting is evicted before a newcomer; among peers that hold
// what they opened, the oldest connection goes first, so a newcomer keeps
// its place until every older unauthenticated one is gone (or, sampled,
// until it is the oldest of its sample), and attackers, whose connections
// are evicted as they reopen them, can displace it no faster than
// ConnectRate × their addresses.
func (l *ConnLimiter) victimLocked(now time.Time) *limitedConn {
	n := len(l.cands)
	if n == 0 {
		return nil
	}
	var best *limitedConn
	var bestTokens, bestUnauth int
	for i := range min(n, victimSample) {
		p := l.cands[i]
		if n > victimSample {
			p = l.cands[l.rng.IntN(n)]
		}
		// Tokens left plus those its unauthenticated connections took:
		// what the peer spent on connections it no longer holds. A peer
		// holding its connections scores its full burst, as a newcomer
		// does; one that keeps reconnecting scores less.
		l.refill(p.rate, now)
		c, tok := p.oldestUnauthenticated(), min(l.lim.ConnectBurst, int(p.rate.tokens)+p.unauthenticated)
		switch {
		case best == nil, tok < bestTokens,
			tok == bestTokens && p.unauthenticated > bestUnauth,
			tok == bestTokens && p.unauthenticated == bestUnauth && c.since.Before(best.since):
			best, bestTokens, bestUnauth = c, tok, p.unauthenticated
		}
	}
	return best
}

// unauthLocked changes p's count of unauthenticated connections by d,
// keeping p in cands exactly while the count is positive.
func (l *ConnLimiter) unauthLocked(p *peerConns, d int) {
	was := p.unauthenticated
	p.unauthenticated += d
	switch {
	case was == 0 && p.unauthenticated > 0:
		p.idx = len(l.cands)
		l.cands = append(l.cands, p)
	case was > 0 && p.unauthenticated == 0:
		last := l.cands[len(l.cands)-1]
		l.cands[p.idx], last.idx = last, p.idx
		l.cands[len(l.cands)-1] = nil
		l.cands = l.cands[:len(l.cands)-1]
		p.idx = -1
	}
}

// oldestUnauthenticated returns the peer's oldest unauthenticated
// connection (the peer must have one).
func (p *peerConns) oldestUnauthenticated() *limitedConn {
	for _, c := range p.conns {
		if !c.trusted.Load() {
			return c
		}
	}
	panic("federation: peer without unauthenticated connections")
}

// release forgets c (once; eviction may already have removed it).
func (l *ConnLimiter) release(c *limitedConn) {
	l.mu.Lock()
	l.removeLocked(c)
	l.mu.Unlock()
}

func (l *ConnLimiter) removeLocked(c *limitedConn) {
	p := l.peers[c.peer]
	if p == nil {
		return
	}
	for i, v := range p.conns {
		if v == c {
			p.conns = append(p.conns[:i:i], p.conns[i+1:]...)
			if !c.trusted.Load() {
				l.unauthLocked(p, -1)
			} else {
				l.unownLocked(c)
			}
			if len(p.conns) == 0 {
				delete(l.peers, c.peer)
			}
			delete(l.byAddr, c.addr)
			l.open--
			if c.reserved {
				l.reserved--
			}
			if c.idle != nil {
				c.idle.Stop()
			}
			return
		}
	}
}

// markTrusted records that the connection from remote address addr has
// completed a mutual TLS handshake with a verified certificate (of common
// name cn): it is authenticated for the client id "cert/cn" (authenticate).
func (l *ConnLimiter) markTrusted(addr, cn string) {
	if l == nil {
		return
	}
	l.authenticate(addr, "cert/"+cn, false, time.Now())
}

// Open returns the number of connections held.
func (l *ConnLimiter) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}

// Unauthenticated returns the number of connections held that have not
// authenticated.
func (l *ConnLimiter) Unauthenticated() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, p := range l.cands {
		n += p.unauthenticated
	}
	return n
}
