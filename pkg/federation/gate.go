package federation

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
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
	c         *Coordinator
	cfg       GRPCServerConfig
	tokenless atomic.Int64
}

// callState is what the gate keeps about one admitted call.
type callState struct {
	method, peer string
	tokenless    bool
	timer        *time.Timer // cancels the call if its request is not read in time
}

type callStateKey struct{}

// errReadTimeout is the cause of cancelling a call whose request was not
// complete within RequestReadTimeout.
var errReadTimeout = errors.New("request not received in time")

// tokenlessMethod reports whether method may be called without a known token.
func (g *gate) tokenlessMethod(method string) bool {
	switch {
	case strings.HasPrefix(method, "/grpc.health.v1.Health/"):
		return true
	case method == pb.Federation_Status_FullMethodName, method == pb.Federation_CreateTask_FullMethodName:
		// Without an admin token the coordinator answers these itself
		// (open status on loopback, or a refusal saying why).
		return g.c.cfg.AdminToken == ""
	}
	return false
}

// tap runs in the connection's reader goroutine when a call's headers
// arrive, before any of its request is read or buffered.
func (g *gate) tap(ctx context.Context, info *tap.Info) (context.Context, error) {
	addr := ""
	if p, ok := peer.FromContext(ctx); ok {
		addr = p.Addr.String()
	}
	cs := &callState{method: info.FullMethodName, peer: addr, tokenless: g.tokenlessMethod(info.FullMethodName)}
	if cs.tokenless {
		if n := g.tokenless.Add(1); n > int64(g.cfg.MaxTokenlessCalls) {
			g.tokenless.Add(-1)
			g.cfg.Audit.Refused(AuditStreamBudget, addr, cs.method, "token-less calls in flight at the limit")
			return nil, status.Errorf(codes.ResourceExhausted, "too many calls without a token in flight (limit %d); retry later", g.cfg.MaxTokenlessCalls)
		}
	} else {
		tok := ""
		if v := info.Header.Get("authorization"); len(v) == 1 {
			tok, _ = strings.CutPrefix(v[0], "Bearer ")
		}
		if !g.c.knownToken(tok) {
			g.cfg.Audit.Refused(AuditStreamNoCred, addr, cs.method, "missing or unknown bearer token")
			return nil, status.Error(codes.Unauthenticated, "missing or unknown bearer token")
		}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	cs.timer = time.AfterFunc(g.cfg.RequestReadTimeout, func() { cancel(errReadTimeout) })
	context.AfterFunc(ctx, func() {
		cs.timer.Stop()
		if cs.tokenless {
			g.tokenless.Add(-1)
		}
	})
	return context.WithValue(ctx, callStateKey{}, cs), nil
}

// TagRPC implements stats.Handler.
func (g *gate) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }

// HandleRPC implements stats.Handler: a received request stops its read
// timer; a call that ends with an error is audited by its status code (or
// as a read timeout); a Federation call that succeeds with a token marks its
// connection as trusted.
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
			if !cs.tokenless && strings.HasPrefix(cs.method, "/fedirl.") {
				g.cfg.Conns.markTrusted(cs.peer)
			}
			return
		}
		if errors.Is(context.Cause(ctx), errReadTimeout) {
			g.cfg.Audit.Refused(AuditReadTimeout, cs.peer, cs.method, fmt.Sprintf("request not complete within %v", g.cfg.RequestReadTimeout))
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
// client without the right certificate) before returning the error to grpc.
type auditedCreds struct {
	credentials.TransportCredentials
	audit *AuditLog
}

// ServerHandshake implements credentials.TransportCredentials.
func (l auditedCreds) ServerHandshake(conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	c, info, err := l.TransportCredentials.ServerHandshake(conn)
	if err != nil {
		l.audit.Refused(AuditTLSHandshake, conn.RemoteAddr().String(), "", err.Error())
	}
	return c, info, err
}

// Clone implements credentials.TransportCredentials.
func (l auditedCreds) Clone() credentials.TransportCredentials {
	return auditedCreds{l.TransportCredentials.Clone(), l.audit}
}
