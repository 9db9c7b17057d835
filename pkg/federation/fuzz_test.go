package federation

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pb "github.com/fedirl/fedirl/proto"
)

// fuzzFixture is one coordinator shared by all inputs of a fuzz target:
// task t1 with θ of dimension 3, fused by the mean.
func fuzzFixture(f *testing.F) (*Coordinator, *Store, map[string]string) {
	return fuzzFixtureWith(f, &meanFuser{}, TaskSpec{ID: "t1", ThetaDim: 3, Quorum: 3, MaxThetaNorm: 10, Rounds: 2})
}

// fuzzFixtureWith is fuzzFixture with the given fuser and task (clients
// alice, bob and carol).
func fuzzFixtureWith(f *testing.F, fuser Fuser, spec TaskSpec) (*Coordinator, *Store, map[string]string) {
	path := filepath.Join(f.TempDir(), "fuzz.db")
	store, err := OpenStore(path)
	if err != nil {
		f.Fatal(err)
	}
	c, err := NewCoordinator(store, CoordinatorConfig{Fuser: fuser, AdminToken: "adm", MaxWait: time.Millisecond})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { c.Close(); store.Close() })
	tok, err := c.CreateTask(spec, []string{"alice", "bob", "carol"})
	if err != nil {
		f.Fatal(err)
	}
	return c, store, tok
}

func floats(b []byte) []float64 {
	out := make([]float64, len(b)/8)
	for i := range out {
		out[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return out
}

// submitOrRefuse submits s with cred. A refusal must carry a classified
// code and leave the store's submission count as it was; it returns the
// result, the counts before and after, and whether s was accepted.
func submitOrRefuse(ctx context.Context, t *testing.T, c *Coordinator, store *Store, cred Credentials, s Submission) (res SubmitResult, before, after int, accepted bool) {
	t.Helper()
	before = totalSubs(t, store)
	res, err := c.Submit(ctx, cred, s)
	after = totalSubs(t, store)
	if err != nil {
		if CodeOf(err) == CodeUnknown || CodeOf(err) == CodeInternal {
			t.Fatalf("unclassified error %v", err)
		}
		if after != before {
			t.Fatalf("refused submission changed the store: %d -> %d", before, after)
		}
		return res, before, after, false
	}
	return res, before, after, true
}

func totalSubs(t *testing.T, s *Store) int {
	sts, err := s.Statuses()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, st := range sts {
		n += st.TotalSubmissions
	}
	return n
}

// FuzzSubmit feeds arbitrary submissions to the coordinator: a refused one
// stores nothing, an accepted one is stored exactly as sent.
func FuzzSubmit(f *testing.F) {
	c, store, tok := fuzzFixture(f)
	one := binary.LittleEndian.AppendUint64(nil, math.Float64bits(1))
	nan := binary.LittleEndian.AppendUint64(nil, math.Float64bits(math.NaN()))
	f.Add("t1", "alice", 1, true, append(append(one, one...), one...), 3, 0.5)
	f.Add("t1", "bob", 1, true, append(append(one, nan...), one...), 3, 0.5)
	f.Add("t1", "bob", 1, false, one, 3, 0.5)
	f.Add("t2", "../x", -1, true, []byte{}, -3, math.Inf(1))
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, task, client string, round int, useToken bool, theta []byte, demos int, grad float64) {
		cred := Credentials{Token: "wrong"}
		if useToken {
			cred.Token = tok[client]
		}
		s := Submission{TaskID: task, ClientID: client, Round: round, Theta: floats(theta), DemoCount: demos, GradNorm: grad}
		res, before, after, accepted := submitOrRefuse(ctx, t, c, store, cred, s)
		if !accepted {
			return
		}
		got, ok, err := func() (Submission, bool, error) {
			subs, err := store.Submissions(task, round)
			for _, x := range subs {
				if x.ClientID == client {
					return x, true, err
				}
			}
			return Submission{}, false, err
		}()
		if err != nil || !ok || !sameSubmission(&got, &s) {
			t.Fatalf("accepted submission not stored as sent: %v %v", ok, err)
		}
		if want := before + 1; !res.Duplicate && after != want {
			t.Fatalf("store went %d -> %d for a new submission", before, after)
		}
	})
}

// FuzzGetTaskAndFused feeds arbitrary lookups to the read handlers.
func FuzzGetTaskAndFused(f *testing.F) {
	c, _, tok := fuzzFixture(f)
	f.Add("t1", "alice", true, 1, int64(0))
	f.Add("t1", "mallory", false, 3, int64(-5))
	f.Add("", "", true, 0, int64(1e12))
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, task, client string, useToken bool, round int, wait int64) {
		cred := Credentials{Token: "x"}
		if useToken {
			cred.Token = tok[client]
		}
		info, err := c.GetTask(ctx, cred, task, client)
		if err == nil && (info.Spec.ID != task || tok[client] == "" || !useToken) {
			t.Fatalf("GetTask(%q, %q) answered %+v", task, client, info)
		}
		if err != nil && CodeOf(err) == CodeUnknown {
			t.Fatalf("unclassified error %v", err)
		}
		fs, err := c.GetFused(ctx, cred, task, client, round, time.Duration(wait))
		if err == nil && fs.Ready && fs.Result.Round != round {
			t.Fatalf("GetFused round %d answered round %d", round, fs.Result.Round)
		}
		if err != nil && CodeOf(err) == CodeUnknown {
			t.Fatalf("unclassified error %v", err)
		}
		if _, err := c.Status(ctx, cred); err == nil && cred.Token != "adm" {
			t.Fatal("status answered without the admin token")
		}
	})
}

// FuzzGRPCHandlers decodes arbitrary bytes as each wire request and runs the
// gRPC handler: it must answer with a classified status, never panic, and
// store nothing unless it accepted a submission.
func FuzzGRPCHandlers(f *testing.F) {
	c, store, tok := fuzzFixture(f)
	svc := &grpcService{c: c}
	for i, m := range []proto.Message{
		&pb.SubmitRequest{TaskId: "t1", ClientId: "alice", Round: 1, Theta: []float64{1, 2, 3}},
		&pb.SubmitRequest{TaskId: "t1", ClientId: "bob", Round: 1, Theta: []float64{math.NaN(), 2, 3}},
		&pb.GetTaskRequest{TaskId: "t1", ClientId: "alice"},
		&pb.GetFusedRequest{TaskId: "t1", ClientId: "alice", Round: 1, WaitMs: 1},
		&pb.StatusRequest{},
		&pb.CreateTaskRequest{Spec: &pb.TaskSpec{Id: "new", ThetaDim: 2, Quorum: 1}, Clients: []string{"x"}},
	} {
		b, _ := proto.Marshal(m)
		f.Add(uint8(i), b, "Bearer "+tok["alice"])
	}
	for _, m := range []struct {
		which uint8
		msg   proto.Message
		auth  string
	}{
		{3, &pb.StatusRequest{PageToken: "not-a-token", PageSize: -1}, "Bearer adm"},
		{3, &pb.StatusRequest{TaskId: "t1", ClientId: "alice", PageSize: 1}, "Bearer adm"},
		{5, &pb.RevokeTokenRequest{TaskId: "t1", ClientId: "carol", Rotate: true}, "Bearer adm"},
		{5, &pb.RevokeTokenRequest{TaskId: "t1", ClientId: "bob"}, "Bearer " + tok["alice"]},
	} {
		b, _ := proto.Marshal(m.msg)
		f.Add(m.which, b, m.auth)
	}
	f.Fuzz(func(t *testing.T, which uint8, raw []byte, auth string) {
		ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs("authorization", auth))
		before := totalSubs(t, store)
		var err error
		submitted := false
		switch which % 6 {
		case 0:
			req := &pb.SubmitRequest{}
			if proto.Unmarshal(raw, req) != nil {
				return
			}
			_, err = svc.Submit(ctx, req)
			submitted = err == nil
		case 1:
			req := &pb.GetTaskRequest{}
			if proto.Unmarshal(raw, req) != nil {
				return
			}
			_, err = svc.GetTask(ctx, req)
		case 2:
			req := &pb.GetFusedRequest{}
			if proto.Unmarshal(raw, req) != nil {
				return
			}
			req.WaitMs = min(req.WaitMs, 1)
			_, err = svc.GetFused(ctx, req)
		case 3:
			req := &pb.StatusRequest{}
			if proto.Unmarshal(raw, req) != nil {
				return
			}
			_, err = svc.Status(ctx, req)
		case 4:
			req := &pb.CreateTaskRequest{}
			if proto.Unmarshal(raw, req) != nil {
				return
			}
			var resp *pb.CreateTaskResponse
			resp, err = svc.CreateTask(ctx, req)
			if err == nil && (auth != "Bearer adm" || len(resp.Tokens) != len(req.Clients)) {
				t.Fatalf("CreateTask answered %d tokens for %d clients with auth %q", len(resp.Tokens), len(req.Clients), auth)
			}
		case 5:
			req := &pb.RevokeTokenRequest{}
			if proto.Unmarshal(raw, req) != nil {
				return
			}
			var resp *pb.RevokeTokenResponse
			resp, err = svc.RevokeToken(ctx, req)
			if bare, _ := strings.CutPrefix(auth, "Bearer "); err == nil && (bare != "adm" || (req.Rotate != (resp.Token != ""))) {
				t.Fatalf("RevokeToken answered %+v with auth %q", resp, auth)
			}
		}
		if err != nil {
			st, ok := status.FromError(err)
			if !ok || st.Code() == codes.Unknown || st.Code() == codes.Internal || st.Message() == "" {
				t.Fatalf("handler %d: unclassified error %v", which%6, err)
			}
		}
		if after := totalSubs(t, store); !submitted && after != before {
			t.Fatalf("handler %d changed the store without accepting a submission", which%6)
		}
	})
}

// FuzzStoreDecode feeds arbitrary bytes to every stored-record decoder: no
// panics, and whatever decodes re-encodes to a value that decodes the same.
func FuzzStoreDecode(f *testing.F) {
	rec, _ := json.Marshal(taskRecord{Spec: TaskSpec{ID: "t", ThetaDim: 2, Quorum: 1, MinClients: 1, Rounds: 1,
		MaxThetaNorm: 1, Fusion: json.RawMessage(`{"method":"mean","weighting":"uniform"}`)}, Clients: map[string]string{"a": HashToken("x")}})
	st, _ := json.Marshal(taskState{Round: 1})
	sb, _ := json.Marshal(sub("t", "a", 1, 1, 2))
	fr, _ := json.Marshal(FusedResult{Round: 1, Theta: []float64{1}, Clients: []string{"a"}, Weights: []float64{1}})
	for _, b := range [][]byte{rec, st, sb, fr, []byte(`{"theta":[1e999]}`), []byte(`{"round":-1}`), []byte("\xff")} {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		roundTrip(t, b, decodeTaskRecord)
		roundTrip(t, b, decodeState)
		roundTrip(t, b, decodeSubmission)
		roundTrip(t, b, decodeFused)
	})
}

func roundTrip[T any](t *testing.T, b []byte, decode func([]byte) (T, error)) {
	v, err := decode(b)
	if err != nil {
		return
	}
	enc, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("re-encoding %T: %v", v, err)
	}
	w, err := decode(enc)
	if err != nil {
		t.Fatalf("re-decoding %T: %v", v, err)
	}
	if !reflect.DeepEqual(normalizeJSON(t, v), normalizeJSON(t, w)) {
		t.Fatalf("%T changed in a round trip", v)
	}
}

func normalizeJSON(t *testing.T, v any) any {
	b, _ := json.Marshal(v)
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
