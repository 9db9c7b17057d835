package federation

import (
	"net"
	"net/netip"
	"time"
)

// peerID identifies a peer of a ConnLimiter: an IPv4 address, the /64
// prefix of an IPv6 address (what one host or subscriber typically holds),
// or, for an address that is not an IP (a Unix socket), the address
// itself. It is comparable, and built from an IP without allocating, so
// the listener can refuse a connection before anything is allocated for
// it.
type peerID struct {
	ip   netip.Addr // IPv4, or IPv6 masked to its /64; invalid for a non-IP address
	name string     // a non-IP address
}

// peerFromIP returns the peer of ip (IPv4-mapped IPv6 addresses are IPv4).
func peerFromIP(ip netip.Addr) peerID {
	ip = ip.Unmap()
	if ip.Is6() {
		p, _ := ip.Prefix(64) // drops the zone; cannot fail for 64 bits of IPv6
		return peerID{ip: p.Addr()}
	}
	return peerID{ip: ip}
}

// peerOf returns the peer a remote address belongs to.
func peerOf(a net.Addr) peerID {
	if t, ok := a.(*net.TCPAddr); ok {
		if ip, ok := netip.AddrFromSlice(t.IP); ok {
			return peerFromIP(ip)
		}
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return peerID{name: a.String()}
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return peerFromIP(ip)
	}
	return peerID{name: host}
}

// String returns the peer as the audit log and the gate name it:
// "127.10.0.1", "2001:db8:1:2::/64" or the non-IP address.
func (p peerID) String() string {
	switch {
	case !p.ip.IsValid():
		return p.name
	case p.ip.Is6():
		return netip.PrefixFrom(p.ip, 64).String()
	}
	return p.ip.String()
}

// peerKey returns the peer a remote address belongs to, as a string
// (peerID.String).
func peerKey(a net.Addr) string { return peerOf(a).String() }

// bucket is a token bucket: tokens at time last, refilled at the
// limiter's ConnectRate up to ConnectBurst. The limiter keeps one per peer
// of the last few seconds, allocated when the peer first connects (not
// per connection), and a peer holding connections points to its own, so
// that scoring victims needs no map lookups.
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

// tokensLocked returns the tokens left in peer's connection-rate bucket.
func (l *ConnLimiter) tokensLocked(peer peerID, now time.Time) float64 {
	b := l.rates[peer]
	if b == nil {
		return float64(l.lim.ConnectBurst)
	}
	l.refill(b, now)
	return b.tokens
}

// allowLocked takes one token from peer's connection-rate bucket, pruning
// refilled buckets of peers that hold no connection at most once a second,
// so the map holds only the peers of the last few seconds and those
// holding connections.
func (l *ConnLimiter) allowLocked(peer peerID, now time.Time) bool {
	if now.Sub(l.lastPrune) >= time.Second {
		for k, b := range l.rates {
			if l.refill(b, now); b.tokens >= float64(l.lim.ConnectBurst) && l.peers[k] == nil {
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

// refundLocked gives peer's token back (its connection authenticated, or
// was refused after the token was taken).
func (l *ConnLimiter) refundLocked(peer peerID) {
	if b := l.rates[peer]; b != nil {
		b.tokens = min(float64(l.lim.ConnectBurst), b.tokens+1)
	}
}
