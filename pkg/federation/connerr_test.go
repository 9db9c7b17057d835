package federation

import (
	"context"
	"crypto/tls"
	"errors"
	"testing"
	"time"

	"github.com/fedirl/fedirl/pkg/federation/fedtest"
)

// TestConnectionMistakesFailAtOnce: a client whose transport cannot match
// the server's (TLS to a plaintext server, a server certificate from an
// unknown CA) gets an error naming the mistake within 5 s, instead of
// retrying until its timeout as for a server that is down. Two mistakes
// stay retried because the transport cannot tell them from a dropped
// connection: plaintext to a TLS server ("error reading server preface:
// EOF") and a missing client certificate under TLS 1.3 mutual TLS (the
// server's refusal arrives after the handshake, often as "broken pipe").
func TestConnectionMistakesFailAtOnce(t *testing.T) {
	ca := fedtest.NewCA(t)
	serverCert := ca.Issue(t, "server", true)
	f := newFixture(t, CoordinatorConfig{})
	tok := f.create(t, testSpec("t1", 1, 1), "a")
	plain := serve(t, f, GRPCServerConfig{})
	tlsAddr := serve(t, f, GRPCServerConfig{TLS: &tls.Config{Certificates: []tls.Certificate{serverCert}}})
	for _, c := range []struct {
		name string
		addr string
		tls  *tls.Config
		want error
	}{
		{"TLS client, plaintext server", plain, &tls.Config{RootCAs: ca.Pool}, ErrPlaintextServer},
		{"unknown server CA", tlsAddr, &tls.Config{}, ErrCertificate},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cl := dial(t, c.addr, DialConfig{Token: tok["a"], TLS: c.tls})
			start := time.Now()
			_, err := RunClient(ctx, cl, fixedLearner{Delta: []float64{1}}, ClientConfig{TaskID: "t1", ClientID: "a", Logf: t.Logf})
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("failed after %v, want < 5 s", took)
			}
			if !errors.Is(err, c.want) {
				t.Errorf("error %v, want one wrapping %q", err, c.want)
			}
		})
	}
}

// TestPermanentConnError classifies transport messages: the permanent ones
// by kind, the transient ones (refused connection, closed connection) as nil.
func TestPermanentConnError(t *testing.T) {
	for msg, want := range map[string]error{
		`connection error: desc = "transport: authentication handshake failed: tls: first record does not look like a TLS handshake"`:                             ErrPlaintextServer,
		`connection error: desc = "error reading server preface: http2: frame too large"`:                                                                         ErrTLSServer,
		`name resolver error: produced zero addresses`:                                                                                                            ErrUnknownHost,
		`connection error: desc = "transport: Error while dialing: dial tcp: lookup nowhere.invalid: no such host"`:                                               ErrUnknownHost,
		`connection error: desc = "transport: authentication handshake failed: tls: failed to verify certificate: x509: certificate signed by unknown authority"`: ErrCertificate,
		`connection error: desc = "transport: Error while dialing: dial tcp 127.0.0.1:1: connect: connection refused"`:                                            nil,
		`connection error: desc = "error reading server preface: EOF"`:                                                                                            nil,
	} {
		err := permanentConnError(msg)
		if want == nil {
			if err != nil {
				t.Errorf("%q: %v, want transient (nil)", msg, err)
			}
			continue
		}
		if !errors.Is(err, want) {
			t.Errorf("%q: %v, want %v", msg, err, want)
		}
	}
}
