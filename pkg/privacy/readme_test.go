package privacy

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestReadmeGridworldNoiseTable: README-gridworld.md's table of noise
// multipliers is what AnalyticSigma (`fedirl privacy sigma`) gives now, at
// δ = 1e-5 and the page's clip C = 0.056, printed as the page prints it
// (6 significant digits for σ, 4 for σ·2C), so the page cannot drift from
// the accountant.
func TestReadmeGridworldNoiseTable(t *testing.T) {
	b, err := os.ReadFile("../experiments/gridworld/README-gridworld.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "| ε | σ (sensitivity 1) | noise std σ·2C |")
	if !ok {
		t.Fatal("README-gridworld.md: no noise-multiplier table")
	}
	const delta, clip = 1e-5, 0.056
	rows := 0
	for _, line := range strings.Split(rest, "\n")[2:] {
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(strings.Trim(line, "| "), "|")
		if len(cells) != 3 {
			t.Fatalf("row %q: want 3 cells", line)
		}
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		eps, err := strconv.ParseFloat(cells[0], 64)
		if err != nil {
			t.Fatalf("row %q: ε: %v", line, err)
		}
		sigma, err := AnalyticSigma(eps, delta)
		if err != nil {
			t.Fatal(err)
		}
		if got := strconv.FormatFloat(sigma, 'g', 6, 64); got != cells[1] {
			t.Errorf("ε = %v: the page's σ %s, AnalyticSigma %s", eps, cells[1], got)
		}
		if got := strconv.FormatFloat(sigma*2*clip, 'g', 4, 64); got != cells[2] {
			t.Errorf("ε = %v: the page's σ·2C %s, the accountant's %s", eps, cells[2], got)
		}
		rows++
	}
	if rows != 5 {
		t.Errorf("%d rows, want the 5 ε of regimes-privacy.yaml", rows)
	}
}
