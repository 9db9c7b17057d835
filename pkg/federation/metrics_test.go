package federation

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// TestMetricsMove: the metrics endpoint shows submissions by outcome and
// code, fusions, their duration and tasks by state, and they move with the
// federation.
func TestMetricsMove(t *testing.T) {
	m := NewMetrics()
	reg := prometheus.NewRegistry()
	if err := m.Register(reg); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, CoordinatorConfig{Metrics: m})
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	scrape := func() string {
		resp, err := http.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	tok := f.create(t, testSpec("t", 1, 2), "a", "b")
	f.create(t, testSpec("idle", 1, 2), "a", "b")
	ctx := context.Background()
	f.coord.Submit(ctx, Credentials{Token: tok["a"]}, sub("t", "a", 1, 1))
	f.coord.Submit(ctx, Credentials{Token: tok["a"]}, sub("t", "a", 1, 1))    // duplicate
	f.coord.Submit(ctx, Credentials{Token: "wrong"}, sub("t", "b", 1, 1))     // refused: token
	f.coord.Submit(ctx, Credentials{Token: tok["b"]}, sub("t", "b", 1, 1, 2)) // refused: dimension
	f.coord.Submit(ctx, Credentials{Token: tok["b"]}, sub("t", "b", 1, 3))    // accepted: fuses
	fs, err := f.coord.GetFused(ctx, Credentials{Token: tok["a"]}, "t", "a", 1, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// θ_a = 1, θ_b = 3, fused 2: each client at distance 1 (the test fuser's score).
	if got := fs.Result.OutlierScores; len(got) != 2 || got[0] != 1 || got[1] != 1 {
		t.Fatalf("fused result's outlier scores %v, want [1 1]", got)
	}
	eventually(t, "the fusion metrics", func() bool { return strings.Contains(scrape(), `fedirl_fusions_total{outcome="fused"} 1`) })
	out := scrape()
	for _, want := range []string{
		`fedirl_submissions_total{code="",outcome="accepted"} 2`,
		`fedirl_submissions_total{code="",outcome="duplicate"} 1`,
		`fedirl_submissions_total{code="Unauthenticated",outcome="refused"} 1`,
		`fedirl_submissions_total{code="InvalidArgument",outcome="refused"} 1`,
		`fedirl_fusion_seconds_count 1`,
		`fedirl_tasks{state="done"} 1`,
		`fedirl_tasks{state="open"} 1`,
		`fedirl_open_connections 0`,
		`fedirl_fusion_outlier_score{client="a",task="t"} 1`,
		`fedirl_fusion_outlier_score{client="b",task="t"} 1`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

// TestMetricsHandlerToken: with a token, metrics are served only to
// requests that carry it.
func TestMetricsHandlerToken(t *testing.T) {
	reg := prometheus.NewRegistry()
	if err := NewMetrics().Register(reg); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(MetricsHandler(reg, "s3cret-token"))
	defer srv.Close()
	for _, tc := range []struct {
		auth string
		want int
	}{{"", http.StatusUnauthorized}, {"Bearer wrong", http.StatusUnauthorized}, {"s3cret-token", http.StatusUnauthorized}, {"Bearer s3cret-token", http.StatusOK}} {
		req, _ := http.NewRequest("GET", srv.URL, nil)
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("Authorization %q: status %d, want %d", tc.auth, resp.StatusCode, tc.want)
		}
		if (resp.StatusCode == http.StatusOK) != strings.Contains(string(b), "fedirl_open_connections") {
			t.Errorf("Authorization %q: body %.80q", tc.auth, b)
		}
	}
}
