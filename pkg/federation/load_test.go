package federation

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// loadResult summarises one load run.
type loadResult struct {
	elapsed  time.Duration
	p50, p99 time.Duration
	scrapes  []float64 // the accepted-submissions counter, scraped during the run
}

// runLoad starts a real gRPC server on 127.0.0.1 and n concurrent clients
// (one goroutine and one connection each) that submit a dim-dimensional θ at
// the same moment, then checks nothing was lost or duplicated and the
// round was fused over all n.
func runLoad(tb testing.TB, n, dim int) loadResult {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	store, err := OpenStore(filepath.Join(tb.TempDir(), "load.db"))
	if err != nil {
		tb.Fatal(err)
	}
	defer store.Close()
	metrics := NewMetrics()
	reg := prometheus.NewRegistry()
	if err := metrics.Register(reg); err != nil {
		tb.Fatal(err)
	}
	coord, err := NewCoordinator(store, CoordinatorConfig{Fuser: &meanFuser{}, Metrics: metrics})
	if err != nil {
		tb.Fatal(err)
	}
	defer coord.Close()
	// The metrics endpoint is scraped over HTTP while the load runs.
	msrv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer msrv.Close()
	var scrapes []float64 // fedirl_submissions_total{outcome="accepted"} per scrape
	stopScrape := make(chan struct{})
	scraped := make(chan struct{})
	go func() {
		defer close(scraped)
		for {
			if v, ok := scrapeAccepted(msrv.URL); ok {
				scrapes = append(scrapes, v)
			}
			select {
			case <-stopScrape:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("client-%04d", i)
	}
	tok, err := coord.CreateTask(TaskSpec{ID: "load", ThetaDim: dim, Quorum: n, MaxThetaNorm: 1e3}, ids)
	if err != nil {
		tb.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	srv := NewGRPCServer(coord, GRPCServerConfig{})
	go srv.Serve(lis)
	defer srv.Stop()

	conns := make([]*GRPCClient, n)
	thetas := make([][]float64, n)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range conns {
		if conns[i], err = DialGRPC(lis.Addr().String(), DialConfig{Token: tok[ids[i]]}); err != nil {
			tb.Fatal(err)
		}
		defer conns[i].Close()
		thetas[i] = make([]float64, dim)
		for k := range thetas[i] {
			thetas[i][k] = rng.NormFloat64()
		}
		if _, err := conns[i].GetTask(ctx, "load", ids[i]); err != nil { // connect before the clock starts
			tb.Fatal(err)
		}
	}
	lat := make([]time.Duration, n)
	errs := make([]error, n)
	var ready, done sync.WaitGroup
	startGate := make(chan struct{})
	ready.Add(n)
	done.Add(n)
	for i := range n {
		go func() {
			defer done.Done()
			ready.Done()
			<-startGate
			t0 := time.Now()
			_, errs[i] = conns[i].Submit(ctx, Submission{TaskID: "load", Round: 1, ClientID: ids[i], Theta: thetas[i], DemoCount: 1})
			lat[i] = time.Since(t0)
		}()
	}
	ready.Wait()
	t0 := time.Now()
	close(startGate)
	done.Wait()
	elapsed := time.Since(t0)
	for i, err := range errs {
		if err != nil {
			tb.Fatalf("client %d: %v", i, err)
		}
	}
	subs, err := store.Submissions("load", 1)
	if err != nil || len(subs) != n {
		tb.Fatalf("%d submissions stored, want %d (%v)", len(subs), n, err)
	}
	fs, err := coord.GetFused(ctx, Credentials{Token: tok[ids[0]]}, "load", ids[0], 1, 10*time.Second)
	if err != nil || !fs.Ready || len(fs.Result.Clients) != n {
		tb.Fatalf("fused over %d clients, want %d (%v)", len(fs.Result.Clients), n, err)
	}
	// The fused θ is the plain mean of what was sent.
	for k := range dim {
		s := 0.0
		for i := range n {
			s += thetas[i][k]
		}
		if d := fs.Result.Theta[k] - s/float64(n); d > 1e-12 || d < -1e-12 {
			tb.Fatalf("fused theta[%d] off by %g", k, d)
		}
	}
	close(stopScrape)
	<-scraped
	if v, _ := scrapeAccepted(msrv.URL); v != float64(n) {
		tb.Fatalf("metrics count %v accepted submissions, want %d", v, n)
	}
	slices.Sort(lat)
	return loadResult{elapsed: elapsed, p50: lat[n/2], p99: lat[(99*n)/100], scrapes: scrapes}
}

// scrapeAccepted GETs a metrics endpoint and returns the accepted
// submissions counter (0, true before the first submission).
func scrapeAccepted(url string) (float64, bool) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, `fedirl_submissions_total{code="",outcome="accepted"} `); ok {
			x, err := strconv.ParseFloat(v, 64)
			return x, err == nil
		}
	}
	return 0, true
}

// TestLoad1000Clients checks zero lost submissions under 1,000 concurrent
// gRPC clients (skipped with -short; the figures come from BenchmarkLoad).
func TestLoad1000Clients(t *testing.T) {
	if testing.Short() {
		t.Skip("load test skipped in -short mode")
	}
	r := runLoad(t, 1000, 64)
	t.Logf("1000 clients, dim 64: %.0f submissions/s, p50 %v, p99 %v; accepted-submissions counter over %d scrapes: %v",
		1000/r.elapsed.Seconds(), r.p50, r.p99, len(r.scrapes), r.scrapes)
	moved := false
	for i := 1; i < len(r.scrapes); i++ {
		if r.scrapes[i] > r.scrapes[i-1] {
			moved = true
		}
	}
	if !moved {
		t.Errorf("the accepted-submissions counter did not move between scrapes during the load: %v", r.scrapes)
	}
}

// BenchmarkLoad1000Clients64D measures 1,000 concurrent clients submitting
// 64-dimensional θ over real gRPC on loopback: submissions/s and latency.
func BenchmarkLoad1000Clients64D(b *testing.B) {
	var total time.Duration
	var p50, p99 []float64
	for b.Loop() {
		r := runLoad(b, 1000, 64)
		total += r.elapsed
		p50 = append(p50, float64(r.p50.Microseconds())/1000)
		p99 = append(p99, float64(r.p99.Microseconds())/1000)
	}
	runs := float64(len(p99))
	b.ReportMetric(1000*runs/total.Seconds(), "submissions/s")
	b.ReportMetric(slices.Max(p50), "p50_ms")
	b.ReportMetric(slices.Max(p99), "p99_ms")
}

// BenchmarkSubmitInProcess1000Clients64D is the same load without gRPC: 1,000
// goroutines calling Coordinator.Submit through the InProcess transport, so
// the difference to BenchmarkLoad1000Clients64D is the transport's cost.
func BenchmarkSubmitInProcess1000Clients64D(b *testing.B) {
	const n, dim = 1000, 64
	var total time.Duration
	for b.Loop() {
		b.StopTimer()
		store, err := OpenStore(filepath.Join(b.TempDir(), "bench.db"))
		if err != nil {
			b.Fatal(err)
		}
		coord, err := NewCoordinator(store, CoordinatorConfig{Fuser: &meanFuser{}})
		if err != nil {
			b.Fatal(err)
		}
		ids := make([]string, n)
		for i := range ids {
			ids[i] = fmt.Sprintf("client-%04d", i)
		}
		tok, err := coord.CreateTask(TaskSpec{ID: "load", ThetaDim: dim, Quorum: n}, ids)
		if err != nil {
			b.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make([]error, n)
		b.StartTimer()
		t0 := time.Now()
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				fed := InProcess{C: coord, Cred: Credentials{Token: tok[ids[i]]}}
				_, errs[i] = fed.Submit(context.Background(), Submission{TaskID: "load", Round: 1, ClientID: ids[i], Theta: make([]float64, dim)})
			}()
		}
		wg.Wait()
		total += time.Since(t0)
		b.StopTimer()
		for _, err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
		if subs, _ := store.Submissions("load", 1); len(subs) != n {
			b.Fatalf("%d stored, want %d", len(subs), n)
		}
		coord.Close()
		store.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(n*b.N)/total.Seconds(), "submissions/s")
}
