package federation

import (
	"errors"
	"strings"
)

// Connection failures that no retry can fix. RunClient's back-off retries
// only transient failures (server down, restarting, overloaded); the gRPC
// transport reports these as a *ConnError wrapping one of the sentinels
// below, so a client stops at once and its caller can name the likely fix.
var (
	// ErrPlaintextServer: the client spoke TLS to a server that serves plaintext gRPC.
	ErrPlaintextServer = errors.New("the server speaks plaintext gRPC, not TLS")
	// ErrTLSServer: the client spoke plaintext to a server that serves TLS.
	ErrTLSServer = errors.New("the server speaks TLS, not plaintext gRPC")
	// ErrUnknownHost: the server's host name does not resolve.
	ErrUnknownHost = errors.New("the server's host name does not resolve")
	// ErrCertificate: a TLS certificate was refused, by the client (the
	// server's) or by the server (the client's, under mutual TLS).
	ErrCertificate = errors.New("a TLS certificate was refused")
)

// ConnError is a connection failure that retrying cannot fix: Kind is one
// of the sentinels above, Msg the transport's own message.
type ConnError struct {
	Kind error
	Msg  string
}

// Error returns the kind followed by the transport's message.
func (e *ConnError) Error() string { return e.Kind.Error() + " (" + e.Msg + ")" }

// Unwrap returns Kind, so errors.Is(err, ErrPlaintextServer) works.
func (e *ConnError) Unwrap() error { return e.Kind }

// permanentConnError classifies the message of a gRPC Unavailable status:
// a *ConnError when it names a failure no retry can fix, else nil. The
// patterns are grpc-go's and crypto/tls's wording.
func permanentConnError(msg string) error {
	for _, c := range []struct {
		kind     error
		patterns []string
	}{
		{ErrPlaintextServer, []string{"first record does not look like a TLS handshake"}},
		{ErrTLSServer, []string{"http2: frame too large"}},
		{ErrUnknownHost, []string{"no such host", "produced zero addresses"}},
		{ErrCertificate, []string{"x509:", "tls: bad certificate", "certificate required", "tls: unknown certificate"}},
	} {
		for _, p := range c.patterns {
			if strings.Contains(msg, p) {
				return &ConnError{Kind: c.kind, Msg: msg}
			}
		}
	}
	return nil
}
