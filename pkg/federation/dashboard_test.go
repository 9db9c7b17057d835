package federation

import (
	"encoding/json"
	"os"
	"regexp"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// TestGrafanaDashboardUsesServedMetrics: every metric that
// docs/grafana-federation.json queries is one the server exports (its
// families' descriptors, plus the process collector's), so the dashboard
// cannot silently drift from the metrics.
func TestGrafanaDashboardUsesServedMetrics(t *testing.T) {
	b, err := os.ReadFile("../../docs/grafana-federation.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if err := NewMetrics().Register(reg); err != nil {
		t.Fatal(err)
	}
	served := map[string]bool{}
	ch := make(chan *prometheus.Desc, 64)
	go func() {
		NewMetrics().describeAll(ch)
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}).Describe(ch)
		close(ch)
	}()
	name := regexp.MustCompile(`fqName: "([a-z_]+)"`)
	for desc := range ch {
		if m := name.FindStringSubmatch(desc.String()); m != nil {
			served[m[1]] = true
		}
	}
	metric := regexp.MustCompile(`\b(fedirl_[a-z_]+|process_[a-z_]+)\b`)
	queried := 0
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			for _, m := range metric.FindAllString(tg.Expr, -1) {
				queried++
				base := regexp.MustCompile(`_(bucket|sum|count)$`).ReplaceAllString(m, "")
				if !served[m] && !served[base] {
					t.Errorf("panel %q queries %s, which the server does not export", p.Title, m)
				}
			}
		}
	}
	if len(d.Panels) < 8 || queried < 10 {
		t.Fatalf("%d panels querying %d metrics", len(d.Panels), queried)
	}
}
