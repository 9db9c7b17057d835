package federation

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/fedirl/fedirl/pkg/federation/fedtest"
	pb "github.com/fedirl/fedirl/proto"
)

// healthClient returns a plaintext health client of the server at addr.
func healthClient(t *testing.T, addr string) healthpb.HealthClient {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return healthpb.NewHealthClient(conn)
}

// TestHealthService: the standard health client (as grpc_health_probe uses
// it) reports SERVING for the server and the Federation service, and
// NOT_SERVING once the coordinator has stopped.
func TestHealthService(t *testing.T) {
	f := newFixture(t, CoordinatorConfig{})
	addr := serve(t, f, GRPCServerConfig{})
	hc := healthClient(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, svc := range []string{"", pb.Federation_ServiceDesc.ServiceName} {
		r, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: svc})
		if err != nil || r.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("health of %q: %v, %v", svc, r.GetStatus(), err)
		}
	}
	f.coord.Close()
	eventually(t, "NOT_SERVING after shutdown", func() bool {
		r, err := hc.Check(ctx, &healthpb.HealthCheckRequest{})
		return err == nil && r.GetStatus() == healthpb.HealthCheckResponse_NOT_SERVING
	})
}

// TestCreateTaskTooLargeForReplyStoresNothing: a task whose tokens could not
// fit in the reply (60,000 clients: ≈ 4.7 MB against a 4 MiB limit) is
// refused before anything is stored, so its id stays free (before, the task
// was stored, the reply failed and the tokens were lost).
func TestCreateTaskTooLargeForReplyStoresNothing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f := newFixture(t, CoordinatorConfig{AdminToken: "adm"})
	addr := serve(t, f, GRPCServerConfig{})
	admin := dial(t, addr, DialConfig{Token: "adm"})
	clients := make([]string, 60000)
	for i := range clients {
		clients[i] = fmt.Sprintf("c%05d", i)
	}
	if _, err := admin.CreateTask(ctx, testSpec("big", 1, 2), clients); CodeOf(err) != CodeResourceExhausted {
		t.Fatalf("60k-client CreateTask: %v", err)
	}
	if sts, _ := f.store.Statuses(); len(sts) != 0 {
		t.Fatalf("refused task was stored: %d tasks", len(sts))
	}
	tok, err := admin.CreateTask(ctx, testSpec("big", 1, 2), clients[:5000])
	if err != nil || len(tok) != 5000 {
		t.Fatalf("5000-client CreateTask under the same id: %d tokens, %v", len(tok), err)
	}
}

// TestWaitingClientNamesTheMissing: a client whose quorum never arrives says
// whom it waited for, once, when it gives up.
func TestWaitingClientNamesTheMissing(t *testing.T) {
	f := newFixture(t, CoordinatorConfig{})
	tok := f.create(t, testSpec("t", 1, 3), "alice", "bob", "carol")
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	var lines []string
	_, err := RunClient(ctx, InProcess{C: f.coord, Cred: Credentials{Token: tok["alice"]}}, fixedLearner{Delta: []float64{1}},
		ClientConfig{TaskID: "t", ClientID: "alice", PollWait: 200 * time.Millisecond,
			Logf: func(format string, args ...any) { lines = append(lines, fmt.Sprintf(format, args...)) }})
	if err == nil || !strings.Contains(err.Error(), "waiting for bob, carol") {
		t.Fatalf("error %v should name the missing clients", err)
	}
	if n := strings.Count(err.Error(), "deadline exceeded"); n != 1 {
		t.Errorf("%q repeats the cause %d times", err, n)
	}
	if len(lines) == 0 || !strings.Contains(lines[len(lines)-1], "waiting for bob, carol") {
		t.Errorf("progress lines %q", lines)
	}
}

// lockedBuffer is a bytes.Buffer safe for the server's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestRefusalsAndHandshakeFailuresAreLogged: a wrong token and a peer that
// is not speaking TLS leave structured log records with the peer's address.
func TestRefusalsAndHandshakeFailuresAreLogged(t *testing.T) {
	var logs lockedBuffer
	ca := fedtest.NewCA(t)
	f := newFixture(t, CoordinatorConfig{})
	f.create(t, testSpec("t", 1, 1), "alice")
	addr := serve(t, f, GRPCServerConfig{Log: slog.New(slog.NewTextHandler(&logs, nil)),
		TLS: &tls.Config{Certificates: []tls.Certificate{ca.Issue(t, "server", true)}}})
	c := dial(t, addr, DialConfig{Token: "not-a-token", TLS: &tls.Config{RootCAs: ca.Pool}})
	if _, err := c.GetTask(context.Background(), "t", "alice"); CodeOf(err) != CodeUnauthenticated {
		t.Fatalf("wrong token: %v", err)
	}
	raw, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	raw.Write([]byte("GET / HTTP/1.0\r\n\r\n"))
	raw.Close()
	eventually(t, "both log records", func() bool {
		s := logs.String()
		return strings.Contains(s, "msg=refused class="+AuditStreamNoCred) &&
			strings.Contains(s, "msg=refused class="+AuditTLSHandshake) && strings.Contains(s, "peer=127.0.0.1:")
	})
}
