package gridworld

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/fedirl/fedirl/pkg/longtest"
)

// markdownTable returns the header and rows of the first Markdown table
// after marker in text, cells trimmed.
func markdownTable(t *testing.T, text, marker string) ([]string, [][]string) {
	t.Helper()
	i := strings.Index(text, marker)
	if i < 0 {
		t.Fatalf("no %q", marker)
	}
	var header []string
	var rows [][]string
	for _, l := range strings.Split(text[i:], "\n") {
		if !strings.HasPrefix(l, "|") {
			if header != nil {
				break
			}
			continue
		}
		var cells []string
		for _, c := range strings.Split(strings.Trim(l, "|"), "|") {
			cells = append(cells, strings.TrimSpace(c))
		}
		switch {
		case header == nil:
			header = cells
		case strings.HasPrefix(cells[0], "---"):
		default:
			rows = append(rows, cells)
		}
	}
	return header, rows
}

// normCell makes a page's cell and a table1.md cell comparable: the page
// writes − for -, \* for *, and keeps its own values before " / " (the
// paper's after it).
func normCell(s string) string {
	s = strings.NewReplacer("−", "-", `\*`, "*").Replace(s)
	ours, _, _ := strings.Cut(s, " / ")
	return strings.ToLower(strings.TrimSpace(ours))
}

// TestReadmeTable1IsTheDefaultRun (long: the default study, ≈ 30 s of CPU)
// runs `fedirl reproduce gridworld` at its defaults and checks that every
// cell of "ours" in README-gridworld's Table 1 and its paired-difference
// table is the cell of the same row and column in the run's table1.md, so
// the page cannot drift from the code (issue 54).
func TestReadmeTable1IsTheDefaultRun(t *testing.T) {
	if !longtest.Enabled() {
		t.Skip("the default study; set " + longtest.Var + "=1 (.ci/run does)")
	}
	st, err := GridWorld(context.Background(), DefaultConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	run := string(st.Table1Markdown())
	b, err := os.ReadFile("README-gridworld.md")
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, tc := range []struct{ pageMarker, runMarker string }{
		{"Table 1 (`go run ./cmd/fedirl reproduce gridworld`", "| Environment | Clients | Seeds |"},
		{"Paired differences from the same run", "Paired differences in percentage points"},
	} {
		ph, prows := markdownTable(t, page, tc.pageMarker)
		rh, rrows := markdownTable(t, run, tc.runMarker)
		col := map[string]int{}
		for k, h := range rh {
			col[normCell(h)] = k
		}
		checked := 0
		for _, pr := range prows {
			var rr []string
			for _, r := range rrows {
				if r[0] == pr[0] {
					rr = r
				}
			}
			if rr == nil {
				t.Errorf("README-gridworld: row %s is not in the run's table1.md", pr[0])
				continue
			}
			for k := 1; k < len(ph); k++ {
				c, ok := col[normCell(ph[k])]
				if !ok {
					t.Errorf("README-gridworld: column %q is not in the run's table1.md", ph[k])
					continue
				}
				if got, want := normCell(pr[k]), normCell(rr[c]); got != want {
					t.Errorf("README-gridworld %s, %s: the page has %q, the default run %q", pr[0], ph[k], got, want)
				}
				checked++
			}
		}
		if checked < 15 {
			t.Errorf("%s: only %d cells compared", tc.pageMarker, checked)
		}
	}
}
