package federation

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fedirl/fedirl/pkg/privacy"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// seriesByFamily gathers reg and counts each metric family's series.
func seriesByFamily(t *testing.T, reg *prometheus.Registry) map[string][]*dto.Metric {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]*dto.Metric{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf.GetMetric()
	}
	return out
}

// TestMetricSeriesBounded is issue 53's acceptance 3 for metrics (before:
// 14,833 outlier series after 1,273 tasks, never deleted): 1,000 tasks of
// 3 clients each created and fused leave at most MaxOutlierTasks ×
// MaxOutlierClients outlier series, and none once the tasks are deleted;
// 1,000 open tasks give round-progress series for MaxTaskSeries of them
// and count the rest as omitted.
func TestMetricSeriesBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("2,000 tasks")
	}
	m := NewMetrics()
	reg := prometheus.NewRegistry()
	if err := m.Register(reg); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, CoordinatorConfig{Metrics: m, Tick: time.Second}) // the deadline checker reads every task per tick
	// Durability is not under test: 5,000 commits without an fsync or a
	// batch delay each.
	f.store.db.NoSync, f.store.db.MaxBatchDelay = true, 0
	ctx := context.Background()
	const n = 1000
	for i := range n {
		id := fmt.Sprintf("done-%04d", i)
		tok := f.create(t, testSpec(id, 1, 3), "a", "b", "c")
		for j, c := range []string{"a", "b", "c"} {
			if _, err := f.coord.Submit(ctx, Credentials{Token: tok[c]}, sub(id, c, 1, float64(j))); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := f.coord.GetFused(ctx, Credentials{Token: tok["a"]}, id, "a", 1, 10*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "every fusion recorded", func() bool {
		return len(seriesByFamily(t, reg)["fedirl_fusion_outlier_score"]) == MaxOutlierTasks*3
	})
	s := seriesByFamily(t, reg)
	// The outlier scores kept are those of the tasks fused last: 0, 1 and
	// 2 against their mean 1 are 1, 0, 1 for every task.
	for _, mt := range s["fedirl_fusion_outlier_score"] {
		task := mt.GetLabel()[1].GetValue()
		if mt.GetLabel()[1].GetName() != "task" || task < fmt.Sprintf("done-%04d", n-MaxOutlierTasks) {
			t.Fatalf("outlier series of task %s kept, want only the %d fused last", task, MaxOutlierTasks)
		}
	}
	if len(s["fedirl_round"]) != 0 {
		t.Fatalf("%d round-progress series for done tasks, want none", len(s["fedirl_round"]))
	}
	total := 0
	for _, ms := range s {
		total += len(ms)
	}
	t.Logf("%d series after %d fused tasks", total, n)
	for i := range n {
		if err := f.store.DeleteTask(fmt.Sprintf("done-%04d", i)); err != nil {
			t.Fatal(err)
		}
	}
	seriesByFamily(t, reg) // a scrape drops the deleted tasks' series
	if k := len(seriesByFamily(t, reg)["fedirl_fusion_outlier_score"]); k != 0 {
		t.Fatalf("%d outlier series after every task was deleted", k)
	}
	for i := range n {
		id := fmt.Sprintf("open-%04d", i)
		tok := f.create(t, testSpec(id, 1, 2), "a", "b")
		if _, err := f.coord.Submit(ctx, Credentials{Token: tok["a"]}, sub(id, "a", 1, 1)); err != nil {
			t.Fatal(err)
		}
	}
	s = seriesByFamily(t, reg)
	if len(s["fedirl_round_submissions"]) != MaxTaskSeries || len(s["fedirl_round_quorum"]) != MaxTaskSeries {
		t.Fatalf("%d and %d round-progress series for %d open tasks, want %d", len(s["fedirl_round_submissions"]), len(s["fedirl_round_quorum"]), n, MaxTaskSeries)
	}
	if o := s["fedirl_task_series_omitted"]; len(o) != 1 || o[0].GetGauge().GetValue() != n-MaxTaskSeries {
		t.Fatalf("omitted %v, want %d", o, n-MaxTaskSeries)
	}
	for _, mt := range s["fedirl_round_submissions"] {
		if mt.GetGauge().GetValue() != 1 {
			t.Fatalf("submissions %v, want 1 per open task", mt)
		}
	}
	total = 0
	for _, ms := range s {
		total += len(ms)
	}
	t.Logf("%d series with %d open tasks", total, n)
}

// gaugeOf returns the value of the series of family with the given label
// values (name=value pairs), failing if there is none.
func gaugeOf(t *testing.T, s map[string][]*dto.Metric, family string, labels ...string) float64 {
	t.Helper()
	for _, m := range s[family] {
		ok := true
		for i := 0; i+1 < len(labels); i += 2 {
			found := false
			for _, l := range m.GetLabel() {
				found = found || (l.GetName() == labels[i] && l.GetValue() == labels[i+1])
			}
			ok = ok && found
		}
		if ok {
			return m.GetGauge().GetValue()
		}
	}
	t.Fatalf("no %s series with %v in %v", family, labels, s[family])
	return 0
}

// TestOperatorMetrics: round progress (submissions, quorum, seconds to the
// deadline), the privacy ε a private task's fused rounds released (two
// rounds whose clients declare at most ε = 1 and 0.5: 1.5 by basic
// composition), and connections by state and by client id, against what
// the test did.
func TestOperatorMetrics(t *testing.T) {
	m := NewMetrics()
	reg := prometheus.NewRegistry()
	if err := m.Register(reg); err != nil {
		t.Fatal(err)
	}
	var clock atomic.Int64 // the coordinator's clock, read by its deadline checker
	clock.Store(time.Unix(1e9, 0).UnixNano())
	f := newFixture(t, CoordinatorConfig{Metrics: m, Now: func() time.Time { return time.Unix(0, clock.Load()) }})
	ctx := context.Background()
	spec := testSpec("dl", 1, 3)
	spec.DeadlineSeconds, spec.MinClients = 60, 3
	tok := f.create(t, spec, "a", "b", "c")
	if _, err := f.coord.Submit(ctx, Credentials{Token: tok["a"]}, sub("dl", "a", 1, 1)); err != nil {
		t.Fatal(err)
	}
	clock.Add(int64(15 * time.Second))
	now := time.Unix(0, clock.Load())
	ptok := f.create(t, privateSpec("dp", 2, 2, 2), "alice", "bob")
	for round, eps := range []float64{1, 0.5} {
		for _, c := range []string{"alice", "bob"} {
			e := eps
			if c == "bob" {
				e = eps / 2
			}
			p, err := privacy.New(privacy.Params{Epsilon: e, Delta: 1e-5, Clip: 1, Rounds: 2})
			if err != nil {
				t.Fatal(err)
			}
			d := p.Declaration()
			s := sub("dp", c, round+1, 0.3, -0.2)
			s.Privacy = &d
			if _, err := f.coord.Submit(ctx, Credentials{Token: ptok[c]}, s); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := f.coord.GetFused(ctx, Credentials{Token: ptok["alice"]}, "dp", "alice", round+1, 10*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := NewConnLimiter(lis, ConnLimits{}, nil)
	defer cl.Close()
	m.CountConnections(cl)
	for i, who := range []string{"a", "a", "b"} {
		c := &limitedConn{peer: peerFromIP(netip.MustParseAddr("10.0.0.1")), addr: fmt.Sprintf("10.0.0.1:%d", i)}
		cl.admit(c, now)
		cl.authenticate(c.addr, ownerKey("dl", who), false, now)
	}
	cl.admit(&limitedConn{peer: peerFromIP(netip.MustParseAddr("10.0.0.2")), addr: "10.0.0.2:1"}, now)
	s := seriesByFamily(t, reg)
	for _, c := range []struct {
		family string
		labels []string
		want   float64
	}{
		{"fedirl_round_submissions", []string{"task", "dl"}, 1},
		{"fedirl_round_quorum", []string{"task", "dl"}, 3},
		{"fedirl_round_deadline_seconds", []string{"task", "dl"}, 45},
		{"fedirl_round", []string{"task", "dl"}, 1},
		{"fedirl_privacy_epsilon_spent", []string{"task", "dp", "kind", "local"}, 1.5},
		{"fedirl_connections", []string{"state", "authenticated"}, 3},
		{"fedirl_connections", []string{"state", "unauthenticated"}, 1},
		{"fedirl_client_connections", []string{"client", "dl/a"}, 2},
		{"fedirl_client_connections", []string{"client", "dl/b"}, 1},
	} {
		if got := gaugeOf(t, s, c.family, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.family, c.labels, got, c.want)
		}
	}
	if len(s["fedirl_round"]) != 1 {
		t.Errorf("round series for %d tasks, want the open one only (dp is done)", len(s["fedirl_round"]))
	}
}
