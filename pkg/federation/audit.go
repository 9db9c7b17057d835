package federation

import (
	"fmt"
	"log/slog"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Refusal classes of the audit log: the gRPC status codes of refused calls
// (their names, e.g. "Unauthenticated", "InvalidArgument") and these
// transport events.
const (
	AuditConnPeerLimit       = "conn_peer_limit"      // a connection refused: its peer holds its share, or every place is authenticated
	AuditConnEvicted         = "conn_evicted"         // an unauthenticated connection closed to admit a newcomer
	AuditConnRate            = "conn_rate"            // a connection refused: its peer connects too fast
	AuditConnUnauthenticated = "conn_unauthenticated" // a connection closed: not authenticated in time
	AuditStreamNoCred        = "stream_no_credential" // a call refused at its headers: no or unknown token
	AuditStreamBudget        = "stream_budget"        // a token-less call refused: the token-less budget is spent
	AuditCheckPeerLimit      = "check_peer_limit"     // a health Check refused: its peer has too many in flight
	AuditWatchPeerLimit      = "watch_peer_limit"     // a health Watch refused: its peer holds too many
	AuditWatchLifetime       = "watch_lifetime"       // a health Watch ended after its lifetime
	AuditReadTimeout         = "read_timeout"         // a call whose request was not complete in time
	AuditTLSHandshake        = "tls_handshake"        // a failed TLS handshake
	AuditClientConnLimit     = "client_conn_limit"    // a connection left unauthenticated: its client id holds PerClient authenticated ones
	AuditClientCallLimit     = "client_call_limit"    // a call refused: its client id has MaxCallsPerClient in flight
	AuditReservedPlace       = "reserved_place"       // a client call served on a reserved place, which it does not authenticate
	AuditTokenRevoked        = "token_revoked"        // a client's token revoked or rotated by the operator, its connections closed
)

// DefaultAuditRate and DefaultAuditBurst are the audit log's default rate
// limit: records per second and the burst allowed above it.
const (
	DefaultAuditRate  = 2
	DefaultAuditBurst = 10
)

// AuditLog is the server's structured, rate-limited log of refusals (one
// slog record per refused connection or call, with peer, method, class and
// reason). A token bucket bounds its size under attack: records beyond it are
// dropped and counted by class, and a summary record ("audit records
// dropped", with the counts) is written at the next Flush (the server flushes
// every 10 s and at shutdown). It is safe for concurrent use.
type AuditLog struct {
	log   *slog.Logger
	rate  float64
	burst float64
	now   func() time.Time

	mu       sync.Mutex
	tokens   float64
	last     time.Time
	dropped  map[string]int
	byPeer   map[string]int // dropped records by peer host (with byID, at most maxDroppedPeers)
	byID     map[peerID]int // dropped records of the listener's refusals, by peer
	peerMore int            // dropped records of peers beyond maxDroppedPeers
}

// maxDroppedPeers bounds the peers whose dropped records are counted one by
// one between flushes; the summary names the topDroppedPeers largest.
const (
	maxDroppedPeers = 1024
	topDroppedPeers = 5
)

// NewAuditLog returns an audit log writing to log (nil discards) at most
// burst records at once and rate records per second on average (≤ 0: the
// defaults).
func NewAuditLog(log *slog.Logger, rate float64, burst int) *AuditLog {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if rate <= 0 {
		rate = DefaultAuditRate
	}
	if burst <= 0 {
		burst = DefaultAuditBurst
	}
	return &AuditLog{log: log, rate: rate, burst: float64(burst), tokens: float64(burst), now: time.Now,
		dropped: map[string]int{}, byPeer: map[string]int{}, byID: map[peerID]int{}}
}

// Refused records one refusal of class by peer (address) on method ("" for
// a connection), or counts it as dropped when over the rate limit.
func (a *AuditLog) Refused(class, peerAddr, method, reason string) {
	if a == nil {
		return
	}
	host := peerAddr
	if h, _, err := net.SplitHostPort(peerAddr); err == nil {
		host = h
	}
	if a.take(class, peerID{}, host) {
		a.write(class, peerAddr, method, reason)
	}
}

// allow reports whether a record of class by peer may be written now,
// taking its place in the rate limit (the caller must then write it), or
// counts it as dropped. Callers on the listener's refusal path use it to
// build a record's text only when it will be written; it allocates
// nothing.
func (a *AuditLog) allow(class string, peer peerID) bool {
	if a == nil {
		return false
	}
	return a.take(class, peer, "")
}

// take is allow for a peer given as a peerID or, when that is the zero
// peerID, as the host string.
func (a *AuditLog) take(class string, peer peerID, host string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	if !a.last.IsZero() {
		a.tokens = min(a.burst, a.tokens+now.Sub(a.last).Seconds()*a.rate)
	}
	a.last = now
	if a.tokens >= 1 {
		a.tokens--
		return true
	}
	a.dropped[class]++
	switch {
	case peer != (peerID{}):
		if _, ok := a.byID[peer]; ok || len(a.byPeer)+len(a.byID) < maxDroppedPeers {
			a.byID[peer]++
		} else {
			a.peerMore++
		}
	default:
		if _, ok := a.byPeer[host]; ok || len(a.byPeer)+len(a.byID) < maxDroppedPeers {
			a.byPeer[host]++
		} else {
			a.peerMore++
		}
	}
	return false
}

// write writes one record (its place in the rate limit taken by take).
func (a *AuditLog) write(class, peerAddr, method, reason string) {
	if a == nil {
		return
	}
	a.log.Warn("refused", "class", class, "peer", peerAddr, "method", method, "reason", truncateReason(reason))
}

// note records an operator's action (not a refusal) of class, unlimited:
// actions are rare and each must be on record.
func (a *AuditLog) note(class, peerAddr, method, reason string) {
	if a == nil {
		return
	}
	a.log.Warn("operator action", "class", class, "peer", peerAddr, "method", method, "reason", truncateReason(reason))
}

// Flush writes one summary record of the refusals dropped since the last
// flush, if any, and reports how many there were. The record counts them by
// class and names the peers (hosts) with the most, so that a peer hoarding
// places is named even when its own records were dropped.
func (a *AuditLog) Flush() int {
	if a == nil {
		return 0
	}
	a.mu.Lock()
	d, bp, byID, more := a.dropped, a.byPeer, a.byID, a.peerMore
	a.dropped, a.byPeer, a.byID, a.peerMore = map[string]int{}, map[string]int{}, map[peerID]int{}, 0
	a.mu.Unlock()
	for id, n := range byID {
		bp[id.String()] += n
	}
	total := 0
	var parts []string
	for class, n := range d {
		total += n
		parts = append(parts, class+"="+strconv.Itoa(n))
	}
	if total == 0 {
		return 0
	}
	sort.Strings(parts)
	hosts := make([]string, 0, len(bp))
	for h := range bp {
		hosts = append(hosts, h)
	}
	sort.Slice(hosts, func(i, j int) bool {
		return bp[hosts[i]] > bp[hosts[j]] || (bp[hosts[i]] == bp[hosts[j]] && hosts[i] < hosts[j])
	})
	var top []string
	for _, h := range hosts[:min(len(hosts), topDroppedPeers)] {
		top = append(top, h+"="+strconv.Itoa(bp[h]))
	}
	if rest := len(hosts) - len(top); rest > 0 {
		top = append(top, fmt.Sprintf("%d other peers", rest))
	}
	if more > 0 {
		top = append(top, fmt.Sprintf("%d records of uncounted peers", more))
	}
	a.log.Warn("audit records dropped", "dropped", total, "by_class", strings.Join(parts, ","),
		"top_peers", strings.Join(top, ","), "limit", fmt.Sprintf("%g/s, burst %g", a.rate, a.burst))
	return total
}

// run flushes every interval until stop is closed, then once more.
func (a *AuditLog) run(interval time.Duration, stop <-chan struct{}) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			a.Flush()
		case <-stop:
			a.Flush()
			return
		}
	}
}

// truncateReason bounds a reason's length in the log (a hostile peer
// controls parts of it).
func truncateReason(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}
