package tasks_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fedirl/fedirl/pkg/fusion"
)

// A documented output is a fenced block in a Markdown file right after an
// HTML comment that names the command producing it:
//
//	<!-- output of examples/own-problem/run.sh (returns.txt); checked by go test ./pkg/tasks -run OwnProblemExample -->
//	```
//	…
//	```
//
// checkDocBlock compares such a block with what the command printed now, so
// that the page cannot drift from the code; with FEDIRL_UPDATE_DOCS=1 it
// writes the new output into the page instead (and the test then passes),
// so a change that alters the output regenerates the page in one command.

// docBlock returns the start and end offsets of the body of the fenced
// block that follows the line holding marker in text.
func docBlock(text, marker string) (start, end int, err error) {
	i := strings.Index(text, marker)
	if i < 0 {
		return 0, 0, fmt.Errorf("no line holding %q", marker)
	}
	rest := text[i:]
	open := strings.Index(rest, "\n```")
	if open < 0 {
		return 0, 0, fmt.Errorf("no fenced block after %q", marker)
	}
	nl := strings.IndexByte(rest[open+1:], '\n')
	start = i + open + 1 + nl + 1
	closeAt := strings.Index(text[start:], "```")
	if closeAt < 0 {
		return 0, 0, fmt.Errorf("the block after %q is not closed", marker)
	}
	return start, start + closeAt, nil
}

// checkDocBlock fails the test when the block after marker in the page
// (relative to the repository root) differs from got, naming the first
// differing line; FEDIRL_UPDATE_DOCS=1 rewrites the block instead.
func checkDocBlock(t *testing.T, page, marker, got string) {
	t.Helper()
	path := filepath.Join(repoRoot(), page)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	start, end, err := docBlock(text, marker)
	if err != nil {
		t.Fatalf("%s: %v", page, err)
	}
	got = strings.TrimRight(got, "\n") + "\n"
	want := text[start:end]
	if want == got {
		return
	}
	if os.Getenv("FEDIRL_UPDATE_DOCS") == "1" {
		if err := os.WriteFile(path, []byte(text[:start]+got+text[end:]), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: rewrote the block after %q", page, marker)
		return
	}
	t.Errorf("%s no longer shows what the command prints (rerun with FEDIRL_UPDATE_DOCS=1 to write it in, then check the prose around it):\n%s",
		page, firstDifference(want, got))
}

// firstDifference describes the first line where the page's block (want)
// and the command's output (got) differ.
func firstDifference(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return fmt.Sprintf("line %d of the block\n  page:    %q\n  command: %q\n--- the command's whole output:\n%s", i+1, wl, gl, got)
		}
	}
	return "(only trailing blank lines differ)"
}

// TestDocBlockCatchesOneCell is the check's own test: a block equal to the
// output passes, one changed cell is caught and named, and the update mode
// writes the output in.
func TestDocBlockCatchesOneCell(t *testing.T) {
	page := "# p\n\n<!-- output of x -->\n```\na  1.0\nb  2.0\n```\nprose\n"
	s, e, err := docBlock(page, "<!-- output of x -->")
	if err != nil || page[s:e] != "a  1.0\nb  2.0\n" {
		t.Fatalf("docBlock: %q, %v", page[s:e], err)
	}
	if d := firstDifference(page[s:e], "a  1.0\nb  2.5\n"); !strings.Contains(d, `line 2 of the block`) || !strings.Contains(d, `"b  2.5"`) {
		t.Errorf("one changed cell: %s", d)
	}
}

// jsonSubset checks that every key and value of doc (a page's JSON example)
// is in gen (what the command wrote): objects key by key (gen may hold more
// keys), arrays entry by entry, numbers to 1e-9 (a page rounds
// -0.6599999999999999 to -0.66), the rest exactly.
func jsonSubset(doc, gen any, path string) error {
	switch d := doc.(type) {
	case map[string]any:
		g, ok := gen.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: the page has an object, the command wrote %v", path, gen)
		}
		for k, v := range d {
			gv, ok := g[k]
			if !ok {
				return fmt.Errorf("%s.%s: on the page, not in what the command wrote", path, k)
			}
			if err := jsonSubset(v, gv, path+"."+k); err != nil {
				return err
			}
		}
	case []any:
		g, ok := gen.([]any)
		if !ok || len(g) != len(d) {
			return fmt.Errorf("%s: the page has %d entries, the command wrote %v", path, len(d), gen)
		}
		for i := range d {
			if err := jsonSubset(d[i], g[i], fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case float64:
		g, ok := gen.(float64)
		if !ok || math.Abs(g-d) > 1e-9 {
			return fmt.Errorf("%s: the page has %v, the command wrote %v", path, d, gen)
		}
	default:
		if doc != gen {
			return fmt.Errorf("%s: the page has %v, the command wrote %v", path, doc, gen)
		}
	}
	return nil
}

// docJSON returns the first ```json block after marker in a page, decoded.
func docJSON(t *testing.T, page, marker string) any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(), page))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	i := strings.Index(text, marker)
	if i < 0 {
		t.Fatalf("%s: no %q", page, marker)
	}
	j := strings.Index(text[i:], "```json\n")
	if j < 0 {
		t.Fatalf("%s: no JSON block after %q", page, marker)
	}
	body := text[i+j+len("```json\n"):]
	body = body[:strings.Index(body, "```")]
	var v any
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("%s: the JSON block after %q: %v", page, marker, err)
	}
	return v
}

// TestReadmeFusionMethodsTable: README.md's table of fusion methods lists
// every method of the registry, in fusion.Methods()'s order, and no other.
func TestReadmeFusionMethodsTable(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot(), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	i := strings.Index(text, "| method | on | bounds (breakdown point) |") // then the measured and when-to-use columns
	if i < 0 {
		t.Fatal("README.md: no fusion methods table")
	}
	var names []string
	for _, l := range strings.Split(text[i:], "\n")[2:] {
		if !strings.HasPrefix(l, "| `") {
			break
		}
		cells := strings.Split(l, "|")
		names = append(names, strings.Trim(strings.TrimSpace(cells[1]), "`"))
	}
	if !slices.Equal(names, fusion.Methods()) {
		t.Fatalf("README.md's fusion methods %v, the registry's %v", names, fusion.Methods())
	}
}
