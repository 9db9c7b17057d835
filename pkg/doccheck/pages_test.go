package doccheck

import (
	"os"
	"path/filepath"
	"testing"
)

// TestEveryTableHasItsSource checks every table of every README page of the
// repository against its provenance comment (see the package comment): a
// table without one, a copied table whose cell differs from its committed
// source, a reshaped table with a number its source does not hold, or a
// checked table whose test is gone fails here, naming the page and line.
func TestEveryTableHasItsSource(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	pages, err := Pages(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) < 10 {
		t.Fatalf("only %d README pages found under %s: %v", len(pages), root, pages)
	}
	n := map[string]int{}
	for _, p := range pages {
		b, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		for _, tb := range Tables(p, string(b)) {
			if err := Check(root, tb); err != nil {
				t.Error(err)
			}
			n[kind(tb.Comment)]++
		}
	}
	t.Logf("tables by provenance: %v", n)
}
