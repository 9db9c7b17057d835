package federation

import (
	"fmt"
	"log/slog"
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
	AuditConnPeerLimit = "conn_peer_limit"      // a connection refused: its peer holds its share
	AuditConnEvicted   = "conn_evicted"         // a connection closed to make room for a fairer peer
	AuditStreamNoCred  = "stream_no_credential" // a call refused at its headers: no or unknown token
	AuditStreamBudget  = "stream_budget"        // a token-less call refused: the token-less budget is spent
	AuditReadTimeout   = "read_timeout"         // a call whose request was not complete in time
	AuditTLSHandshake  = "tls_handshake"        // a failed TLS handshake
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

	mu      sync.Mutex
	tokens  float64
	last    time.Time
	dropped map[string]int
}

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
		dropped: map[string]int{}}
}

// Refused records one refusal of class by peer (address) on method ("" for
// a connection), or counts it as dropped when over the rate limit.
func (a *AuditLog) Refused(class, peerAddr, method, reason string) {
	if a == nil {
		return
	}
	a.mu.Lock()
	now := a.now()
	if !a.last.IsZero() {
		a.tokens = min(a.burst, a.tokens+now.Sub(a.last).Seconds()*a.rate)
	}
	a.last = now
	if a.tokens < 1 {
		a.dropped[class]++
		a.mu.Unlock()
		return
	}
	a.tokens--
	a.mu.Unlock()
	a.log.Warn("refused", "class", class, "peer", peerAddr, "method", method, "reason", truncateReason(reason))
}

// Flush writes one summary record of the refusals dropped since the last
// flush, if any, and reports how many there were.
func (a *AuditLog) Flush() int {
	if a == nil {
		return 0
	}
	a.mu.Lock()
	d := a.dropped
	a.dropped = map[string]int{}
	a.mu.Unlock()
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
	a.log.Warn("audit records dropped", "dropped", total, "by_class", strings.Join(parts, ","),
		"limit", fmt.Sprintf("%g/s, burst %g", a.rate, a.burst))
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
