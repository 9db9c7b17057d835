package federation

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestCertificatesPageScript runs testdata/make-certs.sh (the commands of
// CERTIFICATES.md) and serves a mutual-TLS round with what it made: alice's
// certificate fetches alice's task; the CA's own certificate is not a client
// certificate the server accepts.
func TestCertificatesPageScript(t *testing.T) {
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("openssl not installed")
	}
	dir := t.TempDir()
	if out, err := exec.Command("sh", "testdata/make-certs.sh", dir, "127.0.0.1", "alice").CombinedOutput(); err != nil {
		t.Fatalf("make-certs.sh: %v\n%s", err, out)
	}
	p := func(name string) string { return filepath.Join(dir, name) }
	stc, err := ServerTLSConfig(p("server.crt"), p("server.key"), p("ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, CoordinatorConfig{})
	tok := f.create(t, testSpec("t1", 2, 1), "alice")
	addr := serve(t, f, GRPCServerConfig{TLS: stc})
	ctc, err := ClientTLSConfig(p("ca.crt"), p("alice.crt"), p("alice.key"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	info, err := dial(t, addr, DialConfig{Token: tok["alice"], TLS: ctc}).GetTask(ctx, "t1", "alice")
	if err != nil || info.Spec.ThetaDim != 2 {
		t.Fatalf("GetTask over mutual TLS with the page's certificates: %+v, %v", info, err)
	}
	// A client that does not trust the page's CA refuses the server at once.
	ctc.RootCAs = nil
	_, err = dial(t, addr, DialConfig{Token: tok["alice"], TLS: ctc}).GetTask(ctx, "t1", "alice")
	if !errors.Is(err, ErrCertificate) {
		t.Errorf("client without the CA: %v, want a certificate error", err)
	}
}
