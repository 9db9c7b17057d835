package federation

import (
	"slices"
	"strconv"
	"strings"
	"time"
)

// This file accounts a ConnLimiter's authenticated connections by client id
// (issue 53: one stolen token held every place): each client id holds at
// most PerClient of them, a connection without a call for AuthenticatedIdle
// counts as unauthenticated again, a newcomer to a server whose every place
// is authenticated displaces the least recently used connection of the
// client id holding the most, and Reserved places beyond Max keep room for
// the admin token and health Checks.

// clientConns is what a ConnLimiter holds of one client id.
type clientConns struct {
	key   string
	conns []*limitedConn // authenticated for key, in order of authentication
	idx   int            // position in ConnLimiter.multi while len(conns) >= 2
}

// authenticate marks the connection from remote address addr authenticated
// for client id owner (its first call with the owner's token, or a verified
// certificate), unless it already is, and reports whether it is now. A
// reserved connection is authenticated only by the admin token (admin); a
// client id holding PerClient authenticated connections already has its
// further ones served but left unauthenticated: evictable, expiring, and
// counted against their peer's connection rate, so that a stolen token
// holds at most PerClient places and cannot churn through them faster than
// an unauthenticated peer.
func (l *ConnLimiter) authenticate(addr, owner string, admin bool, now time.Time) bool {
	if l == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.byAddr[addr]
	switch {
	case c == nil:
		return false
	case c.trusted.Load():
		return true
	case c.reserved && !admin:
		return false
	}
	cc := l.clients[owner]
	if cc != nil && len(cc.conns) >= l.lim.PerClient {
		if l.audit.allow(AuditClientConnLimit, c.peer) {
			l.audit.write(AuditClientConnLimit, addr, "", "client "+owner+" holds "+strconv.Itoa(len(cc.conns))+
				" authenticated connections, its limit (--max-connections-per-client): this one is served but stays unauthenticated (evictable)")
		}
		return false
	}
	c.trusted.Store(true)
	c.owner, c.lastCall = owner, now
	if p := l.peers[c.peer]; p != nil {
		l.unauthLocked(p, -1)
	}
	l.refundLocked(c.peer)
	if cc == nil {
		cc = &clientConns{key: owner, idx: -1}
		l.clients[owner] = cc
	}
	cc.conns = append(cc.conns, c)
	l.multiLocked(cc)
	return true
}

// lruLocked returns the least recently used of cc's connections other than
// except (cc must hold two or more): the one with the earliest last call
// among those without a call in flight, else the earliest overall.
func (cc *clientConns) lruLocked(except *limitedConn) *limitedConn {
	var best *limitedConn
	for _, c := range cc.conns {
		if c == except {
			continue
		}
		switch {
		case best == nil,
			(c.inflight == 0) != (best.inflight == 0) && c.inflight == 0,
			(c.inflight == 0) == (best.inflight == 0) && c.lastCall.Before(best.lastCall):
			best = c
		}
	}
	return best
}

// multiLocked keeps cc in l.multi exactly while it holds two or more
// connections.
func (l *ConnLimiter) multiLocked(cc *clientConns) {
	in := cc.idx >= 0
	switch want := len(cc.conns) >= 2; {
	case want && !in:
		cc.idx = len(l.multi)
		l.multi = append(l.multi, cc)
	case !want && in:
		last := l.multi[len(l.multi)-1]
		l.multi[cc.idx], last.idx = last, cc.idx
		l.multi[len(l.multi)-1] = nil
		l.multi = l.multi[:len(l.multi)-1]
		cc.idx = -1
	}
}

// unownLocked removes the authenticated connection c from its client's
// accounting (c stays marked trusted: the caller decides what it becomes).
func (l *ConnLimiter) unownLocked(c *limitedConn) {
	cc := l.clients[c.owner]
	if cc == nil {
		return
	}
	if i := slices.Index(cc.conns, c); i >= 0 {
		cc.conns = slices.Delete(cc.conns, i, i+1)
	}
	l.multiLocked(cc)
	if len(cc.conns) == 0 {
		delete(l.clients, c.owner)
	}
}

// topHolderVictimLocked returns the least recently used connection of the
// client id holding the most places, if it holds two or more (among
// victimSample of the clients holding two or more, drawn at random when
// there are more), or nil.
func (l *ConnLimiter) topHolderVictimLocked() *limitedConn {
	n := len(l.multi)
	if n == 0 {
		return nil
	}
	var best *clientConns
	for i := range min(n, victimSample) {
		cc := l.multi[i]
		if n > victimSample {
			cc = l.multi[l.rng.IntN(n)]
		}
		if best == nil || len(cc.conns) > len(best.conns) || (len(cc.conns) == len(best.conns) && cc.key < best.key) {
			best = cc
		}
	}
	return best.lruLocked(nil)
}

// roomLocked reports whether a newcomer can be placed: a free place, an
// unauthenticated connection or a client's second connection to displace,
// or a free reserved place.
func (l *ConnLimiter) roomLocked() bool {
	return l.open-l.reserved < l.lim.Max || len(l.cands) > 0 || len(l.multi) > 0 || l.reserved < l.lim.Reserved
}

// callStarted records a call starting on the connection from addr,
// returning the connection (nil if the limiter does not hold it).
func (l *ConnLimiter) callStarted(addr string) *limitedConn {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.byAddr[addr]
	if c != nil {
		c.inflight++
		if c.idle != nil {
			c.idle.Stop()
		}
	}
	return c
}

// callEnded records the end of a call that callStarted returned c for, and
// arms the connection's idle timer when it has no call left in flight.
func (l *ConnLimiter) callEnded(c *limitedConn) {
	if c == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	c.inflight--
	c.lastCall = time.Now()
	if c.inflight > 0 || !c.trusted.Load() {
		return
	}
	if c.idle == nil {
		c.idle = time.AfterFunc(l.lim.AuthenticatedIdle, func() { l.demote(c) })
	} else {
		c.idle.Reset(l.lim.AuthenticatedIdle)
	}
}

// demote makes an authenticated connection that has had no call for
// AuthenticatedIdle unauthenticated again: evictable, and counted against
// no client, until its next call authenticates it again.
func (l *ConnLimiter) demote(c *limitedConn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !c.trusted.Load() || c.inflight > 0 || time.Since(c.lastCall) < l.lim.AuthenticatedIdle || l.byAddr[c.addr] != c {
		return
	}
	l.unownLocked(c)
	c.trusted.Store(false)
	c.owner = ""
	if p := l.peers[c.peer]; p != nil {
		l.unauthLocked(p, +1)
	}
}

// CloseClient closes every connection authenticated for client id key
// (ownerKey; a revoked token's), returning how many it closed.
func (l *ConnLimiter) CloseClient(key string) int {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	var conns []*limitedConn
	if cc := l.clients[key]; cc != nil {
		conns = slices.Clone(cc.conns)
	}
	l.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
	return len(conns)
}

// ConnStates counts a ConnLimiter's open connections by state.
type ConnStates struct {
	Unauthenticated int // evictable: no authenticated call yet, or idle since
	Authenticated   int // counted against a client id
	Reserved        int // on the Reserved places (either state)
}

// States returns the open connections by state.
func (l *ConnLimiter) States() ConnStates {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := ConnStates{Reserved: l.reserved}
	for _, cc := range l.clients {
		s.Authenticated += len(cc.conns)
	}
	s.Unauthenticated = l.open - s.Authenticated
	return s
}

// ClientPlaces is one client id and the authenticated places it holds.
type ClientPlaces struct {
	Client string
	Places int
}

// TopClients returns the n client ids holding the most authenticated
// places, most first (ties by id).
func (l *ConnLimiter) TopClients(n int) []ClientPlaces {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.topClientsListLocked(n)
}

func (l *ConnLimiter) topClientsListLocked(n int) []ClientPlaces {
	out := make([]ClientPlaces, 0, len(l.clients))
	for k, cc := range l.clients {
		out = append(out, ClientPlaces{k, len(cc.conns)})
	}
	slices.SortFunc(out, func(a, b ClientPlaces) int {
		if a.Places != b.Places {
			return b.Places - a.Places
		}
		return strings.Compare(a.Client, b.Client)
	})
	return out[:min(n, len(out))]
}

// topClientsLocked describes the n client ids holding the most places, for
// the audit log.
func (l *ConnLimiter) topClientsLocked(n int) string {
	top := l.topClientsListLocked(n)
	if len(top) == 0 {
		return "no client id holds a place (mutual TLS or unauthenticated connections only)"
	}
	var b strings.Builder
	b.WriteString("the most held by client ")
	for i, t := range top {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(t.Client + " (" + strconv.Itoa(t.Places) + ")")
	}
	return b.String()
}
