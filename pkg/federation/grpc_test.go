package federation

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fedirl/fedirl/pkg/federation/fedtest"

	"github.com/fedirl/fedirl/pkg/approx"
)

// serve starts the gRPC adapter for f on 127.0.0.1 and returns its address.
func serve(t *testing.T, f *fixture, cfg GRPCServerConfig) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := NewGRPCServer(f.coord, cfg)
	go s.Serve(lis)
	t.Cleanup(s.Stop)
	return lis.Addr().String()
}

func dial(t *testing.T, addr string, cfg DialConfig) *GRPCClient {
	t.Helper()
	c, err := DialGRPC(addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestGRPCMutualTLSMatchesInProcess(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	spec := testSpec("mtls", 3, 3)
	spec.Rounds, spec.WarmStart, spec.Fusion = 2, true, json.RawMessage(`{"weighting":"demos"}`)
	learners := map[string]Learner{
		"alice": fixedLearner{Delta: []float64{1, 2, 3}, Demos: 5},
		"bob":   fixedLearner{Delta: []float64{-1, 0.25, 7}, Demos: 3},
		"carol": fixedLearner{Delta: []float64{0.125, -4, 2}, Demos: 9},
	}
	var local []LocalClient
	for _, id := range []string{"alice", "bob", "carol"} {
		local = append(local, LocalClient{id, learners[id]})
	}
	want, _, err := RunInProcess(ctx, spec, local, InProcessConfig{Fuser: &meanFuser{}})
	if err != nil {
		t.Fatal(err)
	}

	ca := fedtest.NewCA(t)
	f := newFixture(t, CoordinatorConfig{})
	tok := f.create(t, spec, "alice", "bob", "carol")
	addr := serve(t, f, GRPCServerConfig{TLS: &tls.Config{Certificates: []tls.Certificate{ca.Issue(t, "server", true)},
		ClientCAs: ca.Pool, ClientAuth: tls.RequireAndVerifyClientCert}})
	done := make(chan error, 3)
	for id, l := range learners {
		c := dial(t, addr, DialConfig{Token: tok[id], TLS: &tls.Config{RootCAs: ca.Pool, Certificates: []tls.Certificate{ca.Issue(t, id, false)}}})
		go func() {
			_, err := RunClient(ctx, c, l, ClientConfig{TaskID: "mtls", ClientID: id})
			done <- err
		}()
	}
	for range 3 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	sts, err := f.coord.Status(ctx, Credentials{})
	if err != nil {
		t.Fatal(err)
	}
	got := sts[0].Fused
	if len(got) != 2 {
		t.Fatalf("%d fused rounds over gRPC, want 2", len(got))
	}
	for r := range got {
		approx.Slices(t, "theta", got[r].Theta, want[r].Theta, 0, 0) // bit-identical
		approx.Slices(t, "weights", got[r].Weights, want[r].Weights, 0, 0)
	}

	// A valid certificate for bob cannot submit as alice, even with alice's token.
	bobAsAlice := dial(t, addr, DialConfig{Token: tok["alice"], TLS: &tls.Config{RootCAs: ca.Pool, Certificates: []tls.Certificate{ca.Issue(t, "bob", false)}}})
	_, err = bobAsAlice.GetTask(ctx, "mtls", "alice")
	if CodeOf(err) != CodePermissionDenied || !strings.Contains(err.Error(), "cannot act as client alice") {
		t.Errorf("bob's certificate acting as alice: %v", err)
	}
	// Without a client certificate the handshake fails.
	noCert := dial(t, addr, DialConfig{Token: tok["alice"], TLS: &tls.Config{RootCAs: ca.Pool}})
	if _, err = noCert.GetTask(ctx, "mtls", "alice"); err == nil {
		t.Error("call without a client certificate succeeded")
	}
}

func TestGRPCRefusals(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	f := newFixture(t, CoordinatorConfig{AdminToken: "adm"})
	tok := f.create(t, testSpec("t1", 4, 2), "alice", "bob")
	addr := serve(t, f, GRPCServerConfig{MaxMessageBytes: 4096})
	alice := dial(t, addr, DialConfig{Token: tok["alice"]})
	huge := make([]float64, 1000) // 8 kB > 4 kB limit
	for _, tc := range []struct {
		name string
		sub  Submission
		code Code
		msg  string
	}{
		{"oversized", sub("t1", "alice", 1, huge...), CodeResourceExhausted, "larger than max"},
		{"wrong dimension", sub("t1", "alice", 1, 1), CodeInvalidArgument, "dimension 1"},
		{"as bob", sub("t1", "bob", 1, 1, 2, 3, 4), CodeUnauthenticated, "invalid token for client bob"},
		{"unknown task", sub("zz", "alice", 1, 1, 2, 3, 4), CodeUnauthenticated, "invalid token"},
	} {
		_, err := alice.Submit(ctx, tc.sub)
		if CodeOf(err) != tc.code || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: got %v, want %v %q", tc.name, err, tc.code, tc.msg)
		}
	}
	if n := f.count(t, "t1", 1); n != 0 {
		t.Errorf("%d submissions stored after refusals", n)
	}
	if _, err := alice.Status(ctx); CodeOf(err) != CodeUnauthenticated {
		t.Errorf("status without admin token: %v", err)
	}
	sts, err := dial(t, addr, DialConfig{Token: "adm"}).Status(ctx)
	if err != nil || len(sts) != 1 || sts[0].Quorum != 2 {
		t.Errorf("admin status: %+v %v", sts, err)
	}
	// Remote task creation needs the admin token; the issued tokens work.
	spec2 := testSpec("remote", 1, 1)
	if _, err := alice.CreateTask(ctx, spec2, []string{"zed"}); CodeOf(err) != CodeUnauthenticated {
		t.Errorf("CreateTask with a client token: %v", err)
	}
	admin := dial(t, addr, DialConfig{Token: "adm"})
	toks, err := admin.CreateTask(ctx, spec2, []string{"zed"})
	if err != nil || len(toks) != 1 {
		t.Fatalf("admin CreateTask: %v %v", toks, err)
	}
	if _, err := admin.CreateTask(ctx, spec2, []string{"zed"}); CodeOf(err) != CodeAlreadyExists {
		t.Errorf("second CreateTask: %v", err)
	}
	bad := spec2
	bad.ID, bad.ThetaDim = "bad", 0
	if _, err := admin.CreateTask(ctx, bad, []string{"zed"}); CodeOf(err) != CodeInvalidArgument || !strings.Contains(err.Error(), "theta_dim 0") {
		t.Errorf("invalid CreateTask: %v", err)
	}
	zed := dial(t, addr, DialConfig{Token: toks["zed"]})
	if res, err := zed.Submit(ctx, sub("remote", "zed", 1, 0.5)); err != nil || res.Submissions != 1 {
		t.Errorf("submit with a remotely issued token: %+v %v", res, err)
	}
	if _, err := DialGRPC("10.1.2.3:1", DialConfig{}); err == nil {
		t.Error("plaintext dial to a non-loopback address allowed")
	}
}

func TestClientRetriesUntilServerUp(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	f := newFixture(t, CoordinatorConfig{})
	tok := f.create(t, testSpec("t1", 1, 1), "a")
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close() // nothing listens yet
	c := dial(t, addr, DialConfig{Token: tok["a"]})
	done := make(chan error, 1)
	var rep ClientReport
	go func() {
		var err error
		rep, err = RunClient(ctx, c, fixedLearner{Delta: []float64{2}}, ClientConfig{TaskID: "t1", ClientID: "a"})
		done <- err
	}()
	time.Sleep(300 * time.Millisecond)
	lis, err = net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("port %s taken meanwhile: %v", addr, err)
	}
	gs := NewGRPCServer(f.coord, GRPCServerConfig{})
	go gs.Serve(lis)
	defer gs.Stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	approx.Slices(t, "fused", rep.Final.Theta, []float64{2}, 0, 0)
}

// TestFusedResultWireRoundTrip: every field of a fused result, the outlier
// scores and the warning included, survives the protobuf conversion both ways.
func TestFusedResultWireRoundTrip(t *testing.T) {
	fr := FusedResult{TaskID: "t", Round: 2, Theta: []float64{1, -2}, Method: "median", Clients: []string{"a", "b"},
		Weights: []float64{0.25, 0.75}, MarginalError: 1e-3, Iterations: 9, Trigger: "deadline",
		FusedAt: time.Unix(0, 1234567890).UTC(), OutlierScores: []float64{0.5, 1e3},
		Warning: "outlier score above 3.5 for client b (1e+03)"}
	if back := fusedFromPB(fusedToPB(&fr)); !reflect.DeepEqual(back, fr) {
		t.Fatalf("round trip: %+v, want %+v", back, fr)
	}
	fr.OutlierScores = nil
	if back := fusedFromPB(fusedToPB(&fr)); back.OutlierScores != nil {
		t.Fatalf("no scores came back as %v", back.OutlierScores)
	}
}
