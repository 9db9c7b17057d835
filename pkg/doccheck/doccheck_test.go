package doccheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const sourceFile = `# Run

## The worst client (mean ± std)

| env | method | return |
|---|---|---|
| Pendulum-v1 | local | 0.86 ± 0.01 |
| Pendulum-v1 | mean | 0.91 ± 0.08 |
| CartPole-v1 | mean | 0.00864 ± 0.00012 |
`

// fixture writes a repository with one committed source file and one test
// file, and returns its root.
func fixture(t *testing.T) string {
	root := t.TempDir()
	for name, text := range map[string]string{
		"results/s.md":    sourceFile,
		"pkg/x/x_test.go": "package x\n\n// reads README-x.md\nfunc TestPageTable(t *testing.T) {}\n",
	} {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func check(t *testing.T, root, page string) []error {
	t.Helper()
	var errs []error
	for _, tb := range Tables("README-x.md", page) {
		if err := Check(root, tb); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

const copied = "<!-- table: copied from results/s.md § The worst client -->\n\n| env | method | return |\n|---|---|---|\n| Pendulum-v1 | local | 0.86 ± 0.01 |\n| CartPole-v1 | mean | 0.00864 ± 0.00012 |\n"

func TestCopiedTableCatchesOneCell(t *testing.T) {
	root := fixture(t)
	if errs := check(t, root, copied); len(errs) != 0 {
		t.Fatalf("a row subset of the source: %v", errs)
	}
	errs := check(t, root, strings.Replace(copied, "0.86 ± 0.01", "0.87 ± 0.01", 1))
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "0.87") || !strings.Contains(errs[0].Error(), "README-x.md:3") {
		t.Errorf("one changed cell: %v", errs)
	}
	// Rows out of the source's order, a changed header, a heading that is gone.
	swapped := "<!-- table: copied from results/s.md § The worst client -->\n| env | method | return |\n|---|---|---|\n| CartPole-v1 | mean | 0.00864 ± 0.00012 |\n| Pendulum-v1 | local | 0.86 ± 0.01 |\n"
	for name, page := range map[string]string{
		"order":   swapped,
		"header":  strings.Replace(copied, "| env | method | return |", "| env | method | mean return |", 1),
		"heading": strings.Replace(copied, "The worst client", "The best client", 1),
		"path":    strings.Replace(copied, "results/s.md", "results/gone.md", 1),
	} {
		if errs := check(t, root, page); len(errs) != 1 {
			t.Errorf("%s: %v", name, errs)
		}
	}
}

func TestReshapedTableCatchesOneNumber(t *testing.T) {
	root := fixture(t)
	page := "<!-- table: from results/s.md -->\n| env | local | mean |\n|---|---|---|\n| Pendulum-v1 | 0.86 [0.01] | +0.91 |\n| CartPole-v1 | – | 0.009 |\n"
	if errs := check(t, root, page); len(errs) != 0 {
		t.Fatalf("numbers of the source at the page's rounding (0.009 for 0.00864): %v", errs)
	}
	for _, tc := range []struct{ old, bad string }{{"+0.91", "0.92"}, {"+0.91", "−0.91"}, {"0.009", "0.011"}} {
		errs := check(t, root, strings.Replace(page, tc.old, tc.bad, 1))
		if len(errs) != 1 || !strings.Contains(errs[0].Error(), strings.ReplaceAll(tc.bad, "−", "-")) {
			t.Errorf("%s → %s: %v", tc.old, tc.bad, errs)
		}
	}
	// A hyphen after a word is no minus sign: Pendulum-v1's 1 and a date's
	// parts are numbers of the source only as themselves.
	if got := numbers("Pendulum-v1 on 2026-11-27, −0.5, +3, 5,046,272 steps, 1.5e-3"); strings.Join(got, " ") != "1 2026 11 27 -0.5 3 5046272 1.5e-3" {
		t.Errorf("numbers: %q", got)
	}
}

func TestEveryKindIsChecked(t *testing.T) {
	root := fixture(t)
	tbl := "\n| a | b |\n|---|---|\n| 1 | 2 |\n"
	for _, tc := range []struct {
		comment string
		ok      bool
	}{
		{"", false},
		{"<!-- table: written by hand -->", true},
		{"<!-- just a comment -->", false},
		{"<!-- table: from memory -->", false},
		{"<!-- table: record, measured 2026-11-27 -->", true},
		{"<!-- table: record of the siege -->", false},
		{"<!-- table: record, measured 2999-01-01 -->", false},
		{"<!-- table: checked by go test ./pkg/x -run PageTable -->", true},
		{"<!-- table: checked by go test ./pkg/x -run OtherTable -->", false},
		{"<!-- table: checked by a reviewer -->", false},
		{"<!-- table: invented -->", false},
	} {
		errs := check(t, root, tc.comment+tbl)
		if (len(errs) == 0) != tc.ok {
			t.Errorf("%q: %v", tc.comment, errs)
		}
	}
	// A comment holds for the next table only.
	two := "<!-- table: written by hand -->" + tbl + "\nprose\n" + tbl
	if errs := check(t, root, two); len(errs) != 1 || !strings.Contains(errs[0].Error(), "README-x.md:8") {
		t.Errorf("the second table has no comment: %v", errs)
	}
	// A pipe line that is no table (no delimiter) and a table in a code fence are not tables.
	if got := Tables("p", "|x| ≥ 1 is prose\n```\n| a |\n|---|\n```\n"); len(got) != 0 {
		t.Errorf("not tables: %v", got)
	}
}

func TestReshapedColumnsAndSources(t *testing.T) {
	root := fixture(t)
	if err := os.WriteFile(filepath.Join(root, "results", "t.csv"), []byte("env,x\nAcrobot-v1,0.42\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Prose with its own figures ("5–10 rounds") beside a measured column.
	page := "<!-- table: from results/s.md, results/t.csv; columns: measured -->\n| method | measured | note |\n|---|---|---|\n| mean | 0.91 / 0.42 | 5–10 rounds |\n"
	if errs := check(t, root, page); len(errs) != 0 {
		t.Fatalf("two sources, one column: %v", errs)
	}
	for name, bad := range map[string]string{
		"a number of the checked column": strings.Replace(page, "0.42", "0.43", 1),
		"the second source missing":      strings.Replace(page, "results/t.csv", "results/u.csv", 1),
		"a column that is not there":     strings.Replace(page, "columns: measured", "columns: worst", 1),
		"the whole row":                  strings.Replace(strings.Replace(page, "; columns: measured", "", 1), "table: from", "table: numbers from", 1),
		"a table with no number":         "<!-- table: from results/s.md -->\n| a | b |\n|---|---|\n| x | y |\n",
	} {
		if errs := check(t, root, bad); len(errs) != 1 {
			t.Errorf("%s: %v", name, errs)
		}
	}
}

func TestReshapedRowKeysIntoItsSourceLine(t *testing.T) {
	root := fixture(t)
	// 0.91 is a number of the source, but of Pendulum's mean row, not of
	// CartPole's: "from" finds each row's numbers on its own line.
	page := "<!-- table: from results/s.md -->\n| env | mean |\n|---|---|\n| Pendulum-v1 | 0.91 |\n| CartPole-v1 | 0.009 |\n"
	if errs := check(t, root, page); len(errs) != 0 {
		t.Fatalf("each row from its own line: %v", errs)
	}
	moved := strings.Replace(page, "| CartPole-v1 | 0.009 |", "| CartPole-v1 | 0.91 |", 1)
	if errs := check(t, root, moved); len(errs) != 1 || !strings.Contains(errs[0].Error(), "CartPole-v1") {
		t.Errorf("another row's number: %v", errs)
	}
	if errs := check(t, root, strings.Replace(moved, "table: from", "table: numbers from", 1)); len(errs) != 0 {
		t.Errorf("\"numbers from\" looks among all the source's numbers: %v", errs)
	}
	// The column's header picks the line: Pendulum's local is 0.86, not its mean's 0.91.
	col := "<!-- table: from results/s.md -->\n| env | local |\n|---|---|\n| Pendulum-v1 | 0.91 |\n"
	if errs := check(t, root, col); len(errs) != 1 {
		t.Errorf("the mean row's number in the local column: %v", errs)
	}
}
