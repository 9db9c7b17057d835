package federation

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	pb "github.com/fedirl/fedirl/proto"

	bolt "go.etcd.io/bbolt"
)

// TestStatusPagedAtScale is issue 53's acceptance 3: 9 tasks of 60,000
// clients, each with a fused round listing all of them (weights and
// outlier scores), over gRPC with the default 4 MiB limit. The one-message
// status (before: ResourceExhausted, 8.1 MB) would be far above the limit;
// paged, every reply stays under it, and the merged pages equal the
// store's own status read offline. Filters by task and client return only
// those entries.
func TestStatusPagedAtScale(t *testing.T) {
	if testing.Short() {
		t.Skip("540,000 clients")
	}
	const tasks, clients = 9, 60000
	admin := NewToken()
	f := newFixture(t, CoordinatorConfig{AdminToken: admin})
	ids := make([]string, clients)
	for i := range ids {
		ids[i] = fmt.Sprintf("client-%06d", i)
	}
	for k := range tasks {
		id := fmt.Sprintf("big-%d", k)
		if _, err := f.coord.CreateTask(testSpec(id, 2, clients), ids); err != nil {
			t.Fatal(err)
		}
		fr := FusedResult{TaskID: id, Round: 1, Theta: []float64{1, 2}, Method: "mean", Clients: ids,
			Weights: make([]float64, clients), OutlierScores: make([]float64, clients), Trigger: "quorum", FusedAt: time.Unix(1, 0).UTC()}
		for i := range fr.Weights {
			fr.Weights[i], fr.OutlierScores[i] = 1/float64(clients), float64(i%97)/97
		}
		if err := f.store.db.Update(func(tx *bolt.Tx) error {
			return putRecord(tx.Bucket(bucketFused).Bucket([]byte(id)), recordPath(bucketFused, id), roundKey(1), &fr)
		}); err != nil {
			t.Fatal(err)
		}
	}
	want, err := f.store.Statuses()
	if err != nil {
		t.Fatal(err)
	}
	full := &pb.StatusResponse{}
	for i := range want {
		full.Tasks = append(full.Tasks, &pb.TaskStatus{Id: want[i].ID, ClientsAllowed: want[i].ClientsAllowed, Fused: []*pb.FusedResult{fusedToPB(&want[i].Fused[0])}})
	}
	const limit = 4 * DefaultMaxMessageBytes
	if n := proto.Size(full); n < 2*limit {
		t.Fatalf("the unpaged status is only %d bytes; the test needs one far above the %d-byte limit", n, limit)
	}
	addr, _ := limitedServer(t, f, ConnLimits{}, GRPCServerConfig{})
	c := dial(t, addr, DialConfig{Token: admin})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var pages [][]TaskStatus
	req := &pb.StatusRequest{}
	largest := 0
	for {
		r, err := c.rpc.Status(c.ctx(ctx), req)
		if err != nil {
			t.Fatalf("page %d: %v", len(pages)+1, err)
		}
		largest = max(largest, proto.Size(r))
		page, next := statusPageFromPB(r)
		pages = append(pages, page)
		if next == "" {
			break
		}
		req.PageToken = next
		if len(pages) > 1000 {
			t.Fatal("paging does not end")
		}
	}
	t.Logf("%d pages, the largest %d bytes (limit %d)", len(pages), largest, limit)
	if largest >= limit*3/4 {
		t.Fatalf("a page of %d bytes, want well under the %d-byte limit", largest, limit)
	}
	got := MergeStatusPages(pages)
	if len(got) != tasks {
		t.Fatalf("%d tasks merged, want %d", len(got), tasks)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.ID != w.ID || !slices.Equal(g.ClientsAllowed, w.ClientsAllowed) || len(g.Fused) != 1 ||
			!slices.Equal(g.Fused[0].Clients, w.Fused[0].Clients) || !slices.Equal(g.Fused[0].Weights, w.Fused[0].Weights) ||
			!slices.Equal(g.Fused[0].OutlierScores, w.Fused[0].OutlierScores) || g.ClientsTotal != clients {
			t.Fatalf("task %s: merged pages differ from the store's status (%d clients, %d fused clients)", w.ID, len(g.ClientsAllowed), len(g.Fused[0].Clients))
		}
	}
	one, next, err := c.StatusPage(ctx, StatusQuery{Task: "big-3", Client: "client-012345"})
	if err != nil || next != "" || len(one) != 1 || one[0].ID != "big-3" || !slices.Equal(one[0].ClientsAllowed, []string{"client-012345"}) ||
		!slices.Equal(one[0].Fused[0].Clients, []string{"client-012345"}) || one[0].Fused[0].OutlierScores[0] != float64(12345%97)/97 {
		t.Fatalf("task and client filter: %+v, %q, %v", one, next, err)
	}
	if _, _, err := c.StatusPage(ctx, StatusQuery{PageToken: "garbage!"}); CodeOf(err) != CodeInvalidArgument {
		t.Fatalf("a forged page token: %v, want InvalidArgument", err)
	}
}
