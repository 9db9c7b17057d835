package federation

import (
	"errors"
	"net"
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
//     An authenticated connection (one that started a call with a known
//     token, or under mutual TLS completed its handshake with a verified
//     certificate) is never evicted; when every place is authenticated the
//     newcomer is closed.
//   - A connection still unauthenticated after UnauthenticatedTimeout is
//     closed.
//
// Accept therefore never blocks on the limit: stalled or idle peers, from
// one address or thousands, hold places only until a newcomer needs one,
// and a newcomer keeps its place for as long as the attacker needs to cycle
// through every unauthenticated place older than it. Every refusal,
// eviction and expiry goes to the audit log.
//
// netutil.LimitListener, used before, blocks Accept when full, which lets
// one peer lock every other out; grpc-go offers no per-peer accounting, so
// this type is hand-written (and so is its token bucket, since
// golang.org/x/time/rate cannot give a token back).
type ConnLimiter struct {
	net.Listener
	lim   ConnLimits
	audit *AuditLog

	mu        sync.Mutex
	peers     map[string]*peerConns
	byAddr    map[string]*limitedConn // by remote address
	open      int
	rates     map[string]*bucket // by peer; pruned once refilled
	lastPrune time.Time
}

// peerConns is what a ConnLimiter holds of one peer.
type peerConns struct {
	conns           []*limitedConn // oldest first
	unauthenticated int
}

// NewConnLimiter wraps lis with the limits lim; refusals and evictions are
// recorded in audit (nil: not recorded).
func NewConnLimiter(lis net.Listener, lim ConnLimits, audit *AuditLog) *ConnLimiter {
	return &ConnLimiter{Listener: lis, lim: lim.WithDefaults(), audit: audit, peers: map[string]*peerConns{},
		byAddr: map[string]*limitedConn{}, rates: map[string]*bucket{}}
}

// limitedConn is a connection accounted by a ConnLimiter.
type limitedConn struct {
	net.Conn
	l       *ConnLimiter
	peer    string
	addr    string
	since   time.Time   // admitted at
	trusted atomic.Bool // authenticated: never evicted
	expiry  *time.Timer // closes it if still unauthenticated
	read    int64       // bytes read while unauthenticated (by the one reader at a time)
	once    sync.Once
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

// peerKey returns the peer a remote address belongs to: its IPv4 address,
// the /64 prefix of its IPv6 address, or, for an address that is not an IP
// (a Unix socket), the address itself.
func peerKey(a net.Addr) string {
	var ip net.IP
	if t, ok := a.(*net.TCPAddr); ok {
		ip = t.IP
	} else {
		host, _, err := net.SplitHostPort(a.String())
		if err != nil {
			return a.String()
		}
		if ip = net.ParseIP(host); ip == nil {
			return host
		}
	}
	if ip.To4() == nil && len(ip) == net.IPv6len {
		return (&net.IPNet{IP: ip.Mask(net.CIDRMask(64, 128)), Mask: net.CIDRMask(64, 128)}).String()
	}
	return ip.String()
}

// Accept returns the next connection that fits the limits, closing those
// that do not (and evicting where a newcomer needs a place).
func (l *ConnLimiter) Accept() (net.Conn, error) {
	for {
		raw, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		c := &limitedConn{Conn: raw, l: l, peer: peerKey(raw.RemoteAddr()), addr: raw.RemoteAddr().String()}
		victim, class, reason := l.admit(c, time.Now())
		if victim != nil {
			l.audit.Refused(AuditConnEvicted, victim.addr, "", "closed to admit "+c.addr+": "+reason)
			victim.Close()
		}
		if class != "" {
			l.audit.Refused(class, c.addr, "", reason)
			if tc, ok := raw.(*net.TCPConn); ok {
				// Reset rather than close: under a flood of refused
				// connections no TIME_WAIT socket is left behind.
				tc.SetLinger(0)
			}
			raw.Close()
			continue
		}
		c.expiry = time.AfterFunc(l.lim.UnauthenticatedTimeout, func() {
			if !c.trusted.Load() {
				l.audit.Refused(AuditConnUnauthenticated, c.addr, "", "no authenticated call within "+l.lim.UnauthenticatedTimeout.String())
				c.Close()
			}
		})
		return c, nil
	}
}

// admit accounts c if it fits, returning a connection to evict for it and
// why, or the audit class and reason it is refused (with a nil victim).
func (l *ConnLimiter) admit(c *limitedConn, now time.Time) (victim *limitedConn, class, reason string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.allowLocked(c.peer, now) {
		return nil, AuditConnRate, "peer opens connections faster than " + strconv.FormatFloat(l.lim.ConnectRate, 'g', -1, 64) +
			"/s after a burst of " + strconv.Itoa(l.lim.ConnectBurst) + " (--peer-connect-rate, --peer-connect-burst)"
	}
	p := l.peers[c.peer]
	if p != nil && len(p.conns) >= l.lim.PerPeer {
		l.refundLocked(c.peer) // refused: the token is not spent
		return nil, AuditConnPeerLimit, "peer holds " + strconv.Itoa(len(p.conns)) + " connections, its limit (--max-connections-per-peer)"
	}
	if l.open >= l.lim.Max {
		victim = l.victimLocked(now)
		if victim == nil {
			l.refundLocked(c.peer)
			return nil, AuditConnPeerLimit, "server holds " + strconv.Itoa(l.open) + " connections (--max-connections), every one authenticated"
		}
		reason = "peer " + victim.peer + " held " + strconv.Itoa(l.peers[victim.peer].unauthenticated) + " unauthenticated connections, " +
			strconv.Itoa(int(l.tokensLocked(victim.peer, now))) + " connection tokens left"
		l.removeLocked(victim)
	}

	if p = l.peers[c.peer]; p == nil {
		p = &peerConns{}
		l.peers[c.peer] = p
	}
	p.conns = append(p.conns, c)
	p.unauthenticated++
	c.since = now
	l.byAddr[c.addr] = c
	l.open++
	return victim, "", reason
}

// victimLocked returns the unauthenticated connection a newcomer displaces
// (nil if every connection is authenticated): the oldest of the peer that
// spent most of its connection rate on connections it no longer holds,
// then holding the most unauthenticated connections, then the oldest. A
// peer that keeps reconnecting is evicted before a newcomer; among peers
// that hold what they opened, the oldest connection goes first, so a
// newcomer keeps its place until every older unauthenticated one is gone,
// and attackers, whose connections are evicted as they reopen them, can
// displace it no faster than ConnectRate × their addresses.
func (l *ConnLimiter) victimLocked(now time.Time) *limitedConn {
	var best *limitedConn
	var bestTokens, bestUnauth int
	for k, p := range l.peers {
		if p.unauthenticated == 0 {
			continue
		}
		// Tokens left plus those its unauthenticated connections took:
		// what the peer spent on connections it no longer holds. A peer
		// holding its connections scores its full burst, as a newcomer
		// does; one that keeps reconnecting scores less.
		c, tok := p.oldestUnauthenticated(), min(l.lim.ConnectBurst, int(l.tokensLocked(k, now))+p.unauthenticated)
		switch {
		case best == nil, tok < bestTokens,
			tok == bestTokens && p.unauthenticated > bestUnauth,
			tok == bestTokens && p.unauthenticated == bestUnauth && c.since.Before(best.since):
			best, bestTokens, bestUnauth = c, tok, p.unauthenticated
		}
	}
	return best
}

// tokensLocked returns the tokens left in peer's connection-rate bucket.
func (l *ConnLimiter) tokensLocked(peer string, now time.Time) float64 {
	b := l.rates[peer]
	if b == nil {
		return float64(l.lim.ConnectBurst)
	}
	l.refill(b, now)
	return b.tokens
}

// bucket is a token bucket: tokens at time last, refilled at the
// limiter's ConnectRate up to ConnectBurst.
type bucket struct {
	tokens float64
	last   time.Time
}

// refill brings b to time now.
func (l *ConnLimiter) refill(b *bucket, now time.Time) {
	if now.After(b.last) {
		b.tokens = min(float64(l.lim.ConnectBurst), b.tokens+now.Sub(b.last).Seconds()*l.lim.ConnectRate)
		b.last = now
	}
}

// allowLocked takes one token from peer's connection-rate bucket, pruning
// refilled buckets at most once a second so the map holds only the peers
// of the last few seconds.
func (l *ConnLimiter) allowLocked(peer string, now time.Time) bool {
	if now.Sub(l.lastPrune) >= time.Second {
		for k, b := range l.rates {
			if l.refill(b, now); b.tokens >= float64(l.lim.ConnectBurst) {
				delete(l.rates, k)
			}
		}
		l.lastPrune = now
	}
	b := l.rates[peer]
	if b == nil {
		b = &bucket{tokens: float64(l.lim.ConnectBurst), last: now}
		l.rates[peer] = b
	}
	l.refill(b, now)
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// refundLocked gives peer's token back (its connection authenticated).
func (l *ConnLimiter) refundLocked(peer string) {
	if b := l.rates[peer]; b != nil {
		b.tokens = min(float64(l.lim.ConnectBurst), b.tokens+1)
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
				p.unauthenticated--
			}
			if len(p.conns) == 0 {
				delete(l.peers, c.peer)
			}
			delete(l.byAddr, c.addr)
			l.open--
			return
		}
	}
}

// markTrusted records that the connection from remote address addr has
// authenticated (started a call with a known token, or completed a mutual
// TLS handshake); it is never evicted nor expired after that.
func (l *ConnLimiter) markTrusted(addr string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.byAddr[addr]
	if c == nil || c.trusted.Load() {
		return
	}
	c.trusted.Store(true)
	if p := l.peers[c.peer]; p != nil {
		p.unauthenticated--
	}
	l.refundLocked(c.peer)
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
	for _, p := range l.peers {
		n += p.unauthenticated
	}
	return n
}
