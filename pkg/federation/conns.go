package federation

import (
	"net"
	"strconv"
	"sync"
	"sync/atomic"
)

// DefaultMaxConnections is the default of ConnLimits.Max.
const DefaultMaxConnections = 2048

// DefaultMaxConnectionsPerPeer is the default of ConnLimits.PerPeer: the
// connections one IP address may hold at once. Raise it when many clients
// share one address (a NAT); the fair eviction of ConnLimiter still keeps
// a place for every other peer.
const DefaultMaxConnectionsPerPeer = 256

// ConnLimits bounds the connections a server holds. Zero values are the
// documented defaults.
type ConnLimits struct {
	// Max is the number of connections held at once (default
	// DefaultMaxConnections).
	Max int
	// PerPeer is the number one IP address may hold at once (default
	// DefaultMaxConnectionsPerPeer, at most Max).
	PerPeer int
}

// ConnLimiter is a net.Listener that accounts connections per peer IP
// address instead of letting peers queue in the kernel's backlog:
//
//   - a peer at its PerPeer share has further connections closed at once;
//   - when Max connections are open, a new connection from a peer holding
//     fewer than the largest holder minus one takes the place of one of the
//     largest holder's connections (the oldest that never completed an
//     authenticated call, else its oldest); otherwise it is closed at once.
//
// Accept therefore never blocks on the limit, and a peer that opens
// connections faster than anyone else can only displace itself: an honest
// client from another address always gets a connection. Every refusal and
// eviction goes to the audit log.
//
// netutil.LimitListener, used before, blocks Accept when full, which lets
// one peer lock every other out; grpc-go offers no per-peer accounting, so
// this type is hand-written.
type ConnLimiter struct {
	net.Listener
	lim   ConnLimits
	audit *AuditLog

	mu     sync.Mutex
	peers  map[string][]*limitedConn // by IP, oldest first
	byAddr map[string]*limitedConn   // by remote address
	open   int
}

// NewConnLimiter wraps lis with the limits lim; refusals and evictions are
// recorded in audit (nil: not recorded).
func NewConnLimiter(lis net.Listener, lim ConnLimits, audit *AuditLog) *ConnLimiter {
	if lim.Max <= 0 {
		lim.Max = DefaultMaxConnections
	}
	if lim.PerPeer <= 0 {
		lim.PerPeer = DefaultMaxConnectionsPerPeer
	}
	lim.PerPeer = min(lim.PerPeer, lim.Max)
	return &ConnLimiter{Listener: lis, lim: lim, audit: audit, peers: map[string][]*limitedConn{}, byAddr: map[string]*limitedConn{}}
}

// limitedConn is a connection accounted by a ConnLimiter.
type limitedConn struct {
	net.Conn
	l       *ConnLimiter
	ip      string
	addr    string
	trusted atomic.Bool // completed an authenticated call
	once    sync.Once
}

// Close releases the connection's place.
func (c *limitedConn) Close() error {
	c.once.Do(func() { c.l.release(c) })
	return c.Conn.Close()
}

// peerIP returns the IP address of a remote address ("" if it has none).
func peerIP(a net.Addr) string {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.IP.String()
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}

// Accept returns the next connection that fits the limits, closing those
// that do not (and evicting where fairness asks for it).
func (l *ConnLimiter) Accept() (net.Conn, error) {
	for {
		raw, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		c := &limitedConn{Conn: raw, l: l, ip: peerIP(raw.RemoteAddr()), addr: raw.RemoteAddr().String()}
		victim, reason := l.admit(c)
		if victim != nil {
			l.audit.Refused(AuditConnEvicted, victim.addr, "", "closed to admit "+c.ip+": "+reason)
			victim.Close()
		}
		if reason != "" && victim == nil {
			l.audit.Refused(AuditConnPeerLimit, c.addr, "", reason)
			raw.Close()
			continue
		}
		return c, nil
	}
}

// admit accounts c if it fits, returning a connection to evict for it, or
// the reason it is refused (with a nil victim).
func (l *ConnLimiter) admit(c *limitedConn) (victim *limitedConn, reason string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	mine := len(l.peers[c.ip])
	if mine >= l.lim.PerPeer {
		return nil, "peer holds " + strconv.Itoa(mine) + " connections, its limit (--max-connections-per-peer)"
	}
	if l.open >= l.lim.Max {
		top, n := "", 0
		for ip, cs := range l.peers {
			if len(cs) > n || (len(cs) == n && ip < top) {
				top, n = ip, len(cs)
			}
		}
		if n <= mine+1 {
			return nil, "server holds " + strconv.Itoa(l.open) + " connections (--max-connections) and no peer holds more than its share"
		}
		victim = l.peers[top][0]
		for _, v := range l.peers[top] {
			if !v.trusted.Load() {
				victim = v
				break
			}
		}
		l.removeLocked(victim)
		reason = "peer " + top + " held " + strconv.Itoa(n) + " of " + strconv.Itoa(l.lim.Max) + " connections"
	}
	l.peers[c.ip] = append(l.peers[c.ip], c)
	l.byAddr[c.addr] = c
	l.open++
	return victim, reason
}

// release forgets c (once; eviction may already have removed it).
func (l *ConnLimiter) release(c *limitedConn) {
	l.mu.Lock()
	l.removeLocked(c)
	l.mu.Unlock()
}

func (l *ConnLimiter) removeLocked(c *limitedConn) {
	cs := l.peers[c.ip]
	for i, v := range cs {
		if v == c {
			cs = append(cs[:i:i], cs[i+1:]...)
			if len(cs) == 0 {
				delete(l.peers, c.ip)
			} else {
				l.peers[c.ip] = cs
			}
			delete(l.byAddr, c.addr)
			l.open--
			return
		}
	}
}

// markTrusted records that the connection from remote address addr
// completed an authenticated call; eviction spares it while its peer has
// others.
func (l *ConnLimiter) markTrusted(addr string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	c := l.byAddr[addr]
	l.mu.Unlock()
	if c != nil {
		c.trusted.Store(true)
	}
}

// Open returns the number of connections held.
func (l *ConnLimiter) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}
