package federation

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"

	pb "github.com/fedirl/fedirl/proto"
)

// This file holds what guards the gRPC server against peers that try to
// exhaust it (README-federation.md, "Attack model and limits"): the gate
// that screens calls at their headers and times their requests, the audited
// TLS handshake, and the bounded shutdown. ConnLimiter (conns.go) accounts
// the connections.

// Shutdown stops s gracefully, letting calls in flight finish for at most
// grace, then closes every connection (a stalled call or an open health
// Watch cannot hold the process). It reports whether it had to force.
func Shutdown(s *grpc.Server, grace time.Duration) (forced bool) {
	done := make(chan struct{})
	go func() {
		s.GracefulStop()
		close(done)
	}()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
		return false
	case <-t.C:
		s.Stop()
		<-done
		return true
	}
}

// gate screens calls at their headers (tap), times their request reads and
// audits their outcomes (grpc stats.Handler).
type gate struct {
	c   *Coordinator
	cfg GRPCServerConfig

	mu          sync.Mutex
	tokenless   int            // token-less calls in flight, health Checks excepted
	tokenlessBy map[string]int // the same, by peer
	checks      map[string]int // health Checks in flight, by peer
	watches     map[string]int // health Watch streams, by peer
	callsBy     map[string]int // calls with a token in flight, by client id (ownerKey or adminOwner)
}

// callState is what the gate keeps about one admitted call.
type callState struct {
	method, peer string
	tokenless    bool
	timer        *time.Timer // cancels the call if its request is not read in time
}

type callStateKey struct{}

// errReadTimeout is the cause of cancelling a call whose request was not
// complete within RequestReadTimeout; errWatchLifetime that of ending a
// health Watch after WatchLifetime.
var (
	errReadTimeout   = errors.New("request not received in time")
	errWatchLifetime = errors.New("health Watch lifetime reached")
)

// Budgets of token-less calls (gate.admitTokenless).
const (
	budgetNone  = iota // a Federation call: needs a known token
	budgetCheck        // health Check: per peer only
	budgetWatch        // health Watch: per peer, server-wide, lifetime
	budgetOther        // other token-less calls: server-wide
)

// budgetOf returns the budget a call of method is admitted on.
func (g *gate) budgetOf(method string) int {
	switch {
	case method == healthpb.Health_Check_FullMethodName:
		return budgetCheck
	case method == healthpb.Health_Watch_FullMethodName:
		return budgetWatch
	case strings.HasPrefix(method, "/grpc.health.v1.Health/"):
		return budgetOther
	case method == pb.Federation_Status_FullMethodName, method == pb.Federation_CreateTask_FullMethodName:
		// Without an admin token the coordinator answers these itself
		// (open status on loopback, or a refusal saying why).
		if g.c.cfg.AdminToken == "" {
			return budgetOther
		}
	}
	return budgetNone
}

// admitTokenless takes a place for a token-less call on budget b from
// peer, returning the function that gives it back, or the audit class and
// the status error of a refusal.
func (g *gate) admitTokenless(b int, peer string) (release func(), class string, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if b == budgetCheck {
		if g.checks[peer] >= g.cfg.MaxChecksPerPeer {
			return nil, AuditCheckPeerLimit, status.Errorf(codes.ResourceExhausted, "this peer has %d health Checks in flight, its limit; retry later", g.checks[peer])
		}
		g.checks[peer]++
		return func() { g.mu.Lock(); decr(g.checks, peer); g.mu.Unlock() }, "", nil
	}
	if b == budgetWatch && g.watches[peer] >= g.cfg.MaxWatchesPerPeer {
		return nil, AuditWatchPeerLimit, status.Errorf(codes.ResourceExhausted, "this peer holds %d health Watch streams, its limit", g.watches[peer])
	}
	if g.tokenless >= g.cfg.MaxTokenlessCalls {
		top, n := "", 0
		for p, k := range g.tokenlessBy {
			if k > n || (k == n && p < top) {
				top, n = p, k
			}
		}
		return nil, AuditStreamBudget, status.Errorf(codes.ResourceExhausted, "too many calls without a token in flight (limit %d, the most, %d, held by %s); retry later", g.cfg.MaxTokenlessCalls, n, top)
	}
	g.tokenless++
	g.tokenlessBy[peer]++
	if b == budgetWatch {
		g.watches[peer]++
	}
	return func() {
		g.mu.Lock()
		g.tokenless--
		decr(g.tokenlessBy, peer)
		if b == budgetWatch {
			decr(g.watches, peer)
		}
		g.mu.Unlock()
	}, "", nil
}

// admitCall admits a call with a known token from addr: at most
// MaxCallsPerClient in flight per client id; the connection is
// authenticated for the client (ConnLimiter.authenticate) when the token
// may hold a place, and its calls are counted for its idle timer. It
// returns the function that gives the call's places back.
func (g *gate) admitCall(who caller, addr, method string) (release func(), err error) {
	g.mu.Lock()
	if n := g.callsBy[who.key]; n >= g.cfg.MaxCallsPerClient {
		g.mu.Unlock()
		msg := fmt.Sprintf("client %s has %d calls in flight, its limit (--max-calls-per-client); retry later", who.key, n)
		g.cfg.Audit.Refused(AuditClientCallLimit, addr, method, msg)
		return nil, status.Error(codes.ResourceExhausted, msg)
	}
	g.callsBy[who.key]++
	g.mu.Unlock()
	l := g.cfg.Conns
	if who.holdsPlace {
		l.authenticate(addr, who.key, who.key == adminOwner, time.Now())
	}
	conn := l.callStarted(addr)
	if conn != nil && who.holdsPlace && who.key != adminOwner && !conn.trusted.Load() && conn.reserved {
		g.cfg.Audit.Refused(AuditReservedPlace, addr, method, "client "+who.key+" called on a reserved place (server full): served, but the connection stays evictable")
	}
	return func() {
		l.callEnded(conn)
		g.mu.Lock()
		decr(g.callsBy, who.key)
		g.mu.Unlock()
	}, nil
}

// decr decrements m[k], deleting it at zero.
func decr(m map[string]int, k string) {
	if m[k]--; m[k] <= 0 {
		delete(m, k)
	}
}

// tap runs in the connection's reader goroutine when a call's headers
// arrive, before any of its request is read or buffered.
func (g *gate) tap(ctx context.Context, info *tap.Info) (context.Context, error) {
	addr, pk := "", ""
	if p, ok := peer.FromContext(ctx); ok {
		addr, pk = p.Addr.String(), peerKey(p.Addr)
	}
	b := g.budgetOf(info.FullMethodName)
	cs := &callState{method: info.FullMethodName, peer: addr, tokenless: b != budgetNone}
	release := func() {}
	if cs.tokenless {
		var class string
		var err error
		if release, class, err = g.admitTokenless(b, pk); err != nil {
			g.cfg.Audit.Refused(class, addr, cs.method, status.Convert(err).Message())
			return nil, err
		}
	} else {
		tok := ""
		if v := info.Header.Get("authorization"); len(v) == 1 {
			tok, _ = strings.CutPrefix(v[0], "Bearer ")
		}
		who := g.c.callerOf(tok)
		if who.refusal != nil {
			class := AuditStreamNoCred
			if who.refusal.Code == CodePermissionDenied {
				class = AuditTokenRevoked
			}
			g.cfg.Audit.Refused(class, addr, cs.method, who.refusal.Msg)
			return nil, toStatus(who.refusal)
		}
		var err error
		if release, err = g.admitCall(who, addr, cs.method); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	readTimeout := g.cfg.RequestReadTimeout
	if cs.tokenless {
		readTimeout = min(readTimeout, TokenlessReadTimeout)
	}
	cs.timer = time.AfterFunc(readTimeout, func() { cancel(errReadTimeout) })
	var lifetime *time.Timer
	if b == budgetWatch {
		lifetime = time.AfterFunc(g.cfg.WatchLifetime, func() { cancel(errWatchLifetime) })
	}
	context.AfterFunc(ctx, func() {
		cs.timer.Stop()
		if lifetime != nil {
			lifetime.Stop()
		}
		release()
	})
	return context.WithValue(ctx, callStateKey{}, cs), nil
}

// TagRPC implements stats.Handler.
func (g *gate) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }

// HandleRPC implements stats.Handler: a received request stops its read
// timer; a call that ends with an error is audited by its status code (or
// as a read timeout, or a Watch at the end of its lifetime).
func (g *gate) HandleRPC(ctx context.Context, s stats.RPCStats) {
	cs, _ := ctx.Value(callStateKey{}).(*callState)
	if cs == nil {
		return
	}
	switch s := s.(type) {
	case *stats.InPayload:
		cs.timer.Stop()
	case *stats.End:
		if s.Error == nil {
			return
		}
		switch context.Cause(ctx) {
		case errReadTimeout:
			g.cfg.Audit.Refused(AuditReadTimeout, cs.peer, cs.method, "request not complete in time")
			return
		case errWatchLifetime:
			g.cfg.Audit.Refused(AuditWatchLifetime, cs.peer, cs.method, fmt.Sprintf("health Watch ended after its lifetime of %v", g.cfg.WatchLifetime))
			return
		}
		st := status.Convert(s.Error)
		if c := st.Code(); c != codes.Canceled && c != codes.DeadlineExceeded {
			g.cfg.Audit.Refused(c.String(), cs.peer, cs.method, st.Message())
		}
	}
}

// TagConn implements stats.Handler.
func (g *gate) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }

// HandleConn implements stats.Handler.
func (g *gate) HandleConn(context.Context, stats.ConnStats) {}

// auditedCreds audits failed server-side TLS handshakes (a scanner, a
// client without the right certificate) before returning the error to grpc,
// caps what a peer may send before its handshake completes at
// MaxHandshakeBytes, and marks a connection whose peer presented a verified
// certificate (mutual TLS) as authenticated in conns.
type auditedCreds struct {
	credentials.TransportCredentials
	audit *AuditLog
	conns *ConnLimiter
}

// ServerHandshake implements credentials.TransportCredentials.
func (l auditedCreds) ServerHandshake(conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	capped := &handshakeConn{Conn: conn}
	capped.left.Store(MaxHandshakeBytes)
	c, info, err := l.TransportCredentials.ServerHandshake(capped)
	if err != nil {
		l.audit.Refused(AuditTLSHandshake, conn.RemoteAddr().String(), "", err.Error())
		return c, info, err
	}
	capped.left.Store(-1)
	if ti, ok := info.(credentials.TLSInfo); ok && len(ti.State.VerifiedChains) > 0 && len(ti.State.VerifiedChains[0]) > 0 {
		l.conns.markTrusted(conn.RemoteAddr().String(), ti.State.VerifiedChains[0][0].Subject.CommonName)
	}
	return c, info, err
}

// Clone implements credentials.TransportCredentials.
func (l auditedCreds) Clone() credentials.TransportCredentials {
	return auditedCreds{l.TransportCredentials.Clone(), l.audit, l.conns}
}

// handshakeConn fails reads once its peer has sent more than left bytes;
// left < 0 lifts the cap (after the handshake).
type handshakeConn struct {
	net.Conn
	left atomic.Int64
}

// errHandshakeTooLong is returned by a handshakeConn over its cap.
var errHandshakeTooLong = fmt.Errorf("TLS handshake longer than %d bytes", MaxHandshakeBytes)

// Read implements net.Conn.
func (h *handshakeConn) Read(p []byte) (int, error) {
	left := h.left.Load()
	if left < 0 {
		return h.Conn.Read(p)
	}
	if left == 0 {
		return 0, errHandshakeTooLong
	}
	n, err := h.Conn.Read(p[:min(int64(len(p)), left)])
	h.left.Add(-int64(n))
	return n, err
}
