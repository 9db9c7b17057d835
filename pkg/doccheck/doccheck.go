// Package doccheck keeps the repository's Markdown pages from going stale.
//
// Every table of a page (a header line, a |---| delimiter line and its rows)
// carries, in the HTML comment nearest above it and below the table before
// it, where its numbers come from:
//
//		<!-- table: checked by go test ./pkg/tasks -run ReadmeFusionMethodsTable -->
//		<!-- table: copied from pkg/experiments/control/results/default/summary.md § The worst client -->
//		<!-- table: from pkg/experiments/control/results/paper -->
//		<!-- table: from bench/robust/results/results.md; columns: measured worst EPIC -->
//		<!-- table: record, measured 2026-11-27 -->
//		<!-- table: written by hand -->
//
//	  - checked by: a Go test compares the table with what the code produces
//	    now; the named test must exist in the named package and name the page.
//	  - copied from: the table's header is the header of the first table under
//	    the heading (a line starting with '#' that contains the text after §)
//	    of the committed file, and its rows are rows of that table in its
//	    order (a page may show a subset). The committed file itself is what a
//	    command wrote; where the command is cheap enough, a test reruns it.
//	  - from: a table reshaped from committed results files or folders
//	    (comma-separated): every number of every row is one of the numbers of
//	    the sources, after the page's rounding (the page may print 0.009 for
//	    0.00864); "; columns: NAME | NAME" restricts the check to the named
//	    columns of a table whose other cells are prose.
//	  - record: a measurement (times, memory, throughput) or a run of an
//	    earlier version of the code that no command reproduces bit for bit;
//	    the comment gives the day it was measured (and may give a commit,
//	    which must exist when the checkout has its history).
//	  - written by hand: no command produces it (a list of commands, options,
//	    a declared design).
//
// Check returns every table that has no such comment or fails its check, so
// a changed cell of a copied or reshaped table, a new table without a
// source, or a source that moved fails `go test ./pkg/doccheck`.
//
// Written here, not taken from a library: what it checks is this
// repository's convention for its own pages; the Markdown it reads is the
// small pipe-table subset GitHub renders.
package doccheck

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Table is one pipe table of a page.
type Table struct {
	Page string   // page path, relative to the repository root
	Line int      // 1-based line of the header
	Rows []string // the header, the delimiter and the body lines, as written
	// Comment is the text of the provenance comment ("" when none), without
	// "<!--", "-->" and the "table:" prefix.
	Comment string
}

func (t Table) String() string { return fmt.Sprintf("%s:%d", t.Page, t.Line) }

var delimiter = regexp.MustCompile(`^\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$`)

// Tables returns the tables of a page's text, each with its provenance
// comment: the last "<!-- table: … -->" comment after the previous table's
// end (or the page's start) and before the table's header.
func Tables(page, text string) []Table {
	lines := strings.Split(text, "\n")
	var out []Table
	comment, inFence := "", false
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		if c, ok := tableComment(l); ok {
			comment = c
			continue
		}
		if !strings.HasPrefix(l, "|") || i+1 >= len(lines) || !delimiter.MatchString(lines[i+1]) {
			continue
		}
		j := i + 2
		for j < len(lines) && strings.HasPrefix(lines[j], "|") {
			j++
		}
		out = append(out, Table{Page: page, Line: i + 1, Rows: lines[i:j], Comment: comment})
		comment = ""
		i = j - 1
	}
	return out
}

// tableComment reports whether the line is a "<!-- table: … -->" comment
// and returns its text.
func tableComment(l string) (string, bool) {
	l = strings.TrimSpace(l)
	if !strings.HasPrefix(l, "<!--") || !strings.HasSuffix(l, "-->") {
		return "", false
	}
	body := strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(l, "<!--"), "-->"))
	rest, ok := strings.CutPrefix(body, "table:")
	if !ok {
		return "", false
	}
	return strings.TrimSpace(rest), true
}

// Cells splits a table line into its trimmed cells.
func Cells(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(line, "|")
	line = strings.TrimSuffix(line, "|")
	var cells []string
	cur := strings.Builder{}
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
			cur.WriteByte('|')
			i++
		case line[i] == '|':
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(line[i])
		}
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

// Check checks one table against its provenance comment; root is the
// repository root. It returns nil when the table holds.
func Check(root string, t Table) error {
	c := t.Comment
	switch {
	case c == "":
		return fmt.Errorf("%s: a table without a provenance comment (<!-- table: checked by … | copied from … | from … | record, measured … | written by hand -->)", t)
	case strings.HasPrefix(c, "checked by "):
		return checkTest(root, t, strings.TrimPrefix(c, "checked by "))
	case strings.HasPrefix(c, "copied from "):
		return checkCopied(root, t, strings.TrimPrefix(c, "copied from "))
	case strings.HasPrefix(c, "from "):
		return checkNumbers(root, t, strings.TrimPrefix(c, "from "), true)
	case strings.HasPrefix(c, "numbers from "):
		return checkNumbers(root, t, strings.TrimPrefix(c, "numbers from "), false)
	case strings.HasPrefix(c, "record"):
		return checkRecord(root, t, c)
	case c == "written by hand" || strings.HasPrefix(c, "written by hand "):
		return nil
	}
	return fmt.Errorf("%s: provenance %q is none of: checked by, copied from, from, record, written by hand", t, c)
}

var testRef = regexp.MustCompile(`^go test (\./[^ ]+) -run '?\^?([A-Za-z0-9_]+)\$?'?$`)

// checkTest: "go test ./pkg/x -run Name": the package has a test function
// whose name contains Name, and that test's file names the page.
func checkTest(root string, t Table, ref string) error {
	m := testRef.FindStringSubmatch(strings.TrimSpace(ref))
	if m == nil {
		return fmt.Errorf("%s: %q: want \"checked by go test ./pkg/… -run TestName\"", t, ref)
	}
	dir := filepath.Join(root, filepath.FromSlash(m[1]))
	files, _ := filepath.Glob(filepath.Join(dir, "*_test.go"))
	fn := regexp.MustCompile(`(?m)^func (Test\w*` + regexp.QuoteMeta(m[2]) + `\w*)\(`)
	base := filepath.Base(t.Page)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		if fn.Match(b) {
			if !strings.Contains(string(b), base) {
				return fmt.Errorf("%s: %s holds the test %s but never names %s", t, f, m[2], base)
			}
			return nil
		}
	}
	return fmt.Errorf("%s: no test matching %s in %s", t, m[2], m[1])
}

// source resolves a path of a comment, relative to the repository root or,
// failing that, to the page's folder.
func source(root string, t Table, p string) (string, error) {
	p = strings.TrimSpace(p)
	for _, cand := range []string{filepath.Join(root, filepath.FromSlash(p)), filepath.Join(root, filepath.Dir(t.Page), filepath.FromSlash(p))} {
		if _, err := os.Stat(cand); err == nil {
			return cand, nil
		}
	}
	return "", fmt.Errorf("%s: source %s does not exist (relative to the repository root or to the page)", t, p)
}

// checkCopied: "PATH § HEADING".
func checkCopied(root string, t Table, ref string) error {
	p, heading, ok := strings.Cut(ref, "§")
	if !ok {
		return fmt.Errorf("%s: %q: want \"copied from PATH § HEADING\"", t, ref)
	}
	path, err := source(root, t, p)
	if err != nil {
		return err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	heading = strings.TrimSpace(heading)
	lines := strings.Split(string(b), "\n")
	at := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "#") && strings.Contains(l, heading) {
			at = i
			break
		}
	}
	if at < 0 {
		return fmt.Errorf("%s: %s has no heading holding %q", t, p, heading)
	}
	src := Tables(p, strings.Join(lines[at:], "\n"))
	if len(src) == 0 {
		return fmt.Errorf("%s: %s has no table under %q", t, p, heading)
	}
	want := src[0].Rows
	if norm(t.Rows[0]) != norm(want[0]) {
		return fmt.Errorf("%s: the header differs from %s § %s:\n  page:   %s\n  source: %s", t, p, heading, t.Rows[0], want[0])
	}
	k := 2
	for _, r := range t.Rows[2:] {
		for k < len(want) && norm(want[k]) != norm(r) {
			k++
		}
		if k == len(want) {
			return fmt.Errorf("%s: row %q is not a row of %s § %s (or not in its order)", t, r, p, heading)
		}
		k++
	}
	return nil
}

func norm(line string) string { return strings.Join(Cells(line), "|") }

var number = regexp.MustCompile(`[-+−]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+−]?\d+)?`)

// numbers returns the numbers of a text as their printed strings, with the
// page's − and thousands separators normalized.
func numbers(s string) []string {
	var out []string
	for _, ix := range number.FindAllStringIndex(s, -1) {
		m := s[ix[0]:ix[1]]
		if ix[0] > 0 && isWordByte(s[ix[0]-1]) {
			// 2026-11-27, Pendulum-v1, x1: a sign after a word is a hyphen.
			m = strings.TrimLeft(m, "+-")
			m = strings.TrimPrefix(m, "−")
		}
		m = strings.ReplaceAll(m, "−", "-")
		m = strings.TrimPrefix(m, "+")
		if strings.Contains(m, ",") && !strings.ContainsAny(m, "eE") {
			m = strings.ReplaceAll(m, ",", "")
		}
		out = append(out, m)
	}
	return out
}

func isWordByte(b byte) bool {
	return b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= 0x80
}

// decimals is the number of digits after the point of a printed number
// (its exponent shifts it: 1.5e-3 has 4).
func decimals(s string) int {
	mant, exp, _ := strings.Cut(strings.ToLower(s), "e")
	d := 0
	if _, frac, ok := strings.Cut(mant, "."); ok {
		d = len(frac)
	}
	if exp != "" {
		e, _ := strconv.Atoi(exp)
		d -= e
	}
	return d
}

// checkNumbers: "PATH[, PATH…][; columns: NAME | NAME…]": every number of
// every body row (or of the named columns only, where the other cells are
// prose with its own figures) is a number of the sources (each a file, or
// every .md, .csv, .json, .txt and .yaml file of a folder) at the page's
// rounding, found where that row and column are: a row's key cells (its
// first cell and every other that holds a letter: "Pendulum-v1", "paper",
// "yes") must all be on the source line; where source lines have the
// column's header as one of their cells ("local", "mean"), the number must
// be on one of those that holds the row's first key. Only when no table line of
// the sources holds the row's keys (a JSON file, prose) is a number looked
// up among all the sources' numbers. A reshaped table holds at least one
// number.
func checkNumbers(root string, t Table, ref string, keyed bool) error {
	ref, colSpec, _ := strings.Cut(ref, ";")
	cols, err := columns(t, colSpec)
	if err != nil {
		return err
	}
	var files []string
	for _, r := range strings.Split(ref, ",") {
		path, err := source(root, t, r)
		if err != nil {
			return err
		}
		if st, _ := os.Stat(path); st.IsDir() {
			_ = filepath.Walk(path, func(p string, info os.FileInfo, err error) error {
				if err == nil && !info.IsDir() && slices.Contains([]string{".md", ".csv", ".json", ".txt", ".yaml"}, filepath.Ext(p)) {
					files = append(files, p)
				}
				return nil
			})
		} else {
			files = append(files, path)
		}
	}
	all := newPool()
	var lines []sourceLine
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		csv := filepath.Ext(f) == ".csv"
		for _, l := range strings.Split(string(b), "\n") {
			var cells []string
			switch {
			case csv:
				// A comma of a CSV file separates fields, never thousands.
				cells = strings.Split(l, ",")
				l = strings.Join(cells, " | ")
			case strings.HasPrefix(strings.TrimSpace(l), "|"):
				cells = Cells(l)
			}
			all.add(l)
			if cells != nil {
				sl := sourceLine{text: plain(l), cells: map[string]bool{}, nums: newPool()}
				for _, c := range cells {
					sl.cells[plain(c)] = true
				}
				sl.nums.add(l)
				lines = append(lines, sl)
			}
		}
	}
	all.sort()
	header := Cells(t.Rows[0])
	seen := 0
	for _, r := range t.Rows[2:] {
		cells := Cells(r)
		if !keyed {
			text := r
			if cols != nil {
				var kept []string
				for _, k := range cols {
					if k < len(cells) {
						kept = append(kept, cells[k])
					}
				}
				text = strings.Join(kept, " | ")
			}
			for _, n := range numbers(text) {
				seen++
				if !all.has(n) {
					return fmt.Errorf("%s: %s is in the row %q but in no number of %s at that rounding", t, n, r, strings.TrimSpace(ref))
				}
			}
			continue
		}
		var keys []string
		for k, c := range cells {
			if c = plain(c); k == 0 && c != "" || hasLetter(c) && (cols == nil || !slices.Contains(cols, k)) {
				keys = append(keys, c)
			}
		}
		var keyed []sourceLine
		for _, sl := range lines {
			if sl.hasAll(keys) {
				keyed = append(keyed, sl)
			}
		}
		for k, c := range cells {
			checked := cols == nil && !hasLetter(plain(c)) || cols != nil && slices.Contains(cols, k)
			if k == 0 || !checked {
				continue
			}
			// The lines of this row and column: its first key with the
			// column's header as a cell ("Pendulum-v1" … "local"; the
			// other keys may sit elsewhere, as a "true" row of no
			// lattice); else the lines of all the row's keys.
			var here []sourceLine
			if k < len(header) && len(keys) > 0 {
				h := plain(header[k])
				for _, sl := range lines {
					if sl.cells[h] && strings.Contains(sl.text, keys[0]) {
						here = append(here, sl)
					}
				}
			}
			if len(here) == 0 {
				here = keyed
			}
			for _, n := range numbers(c) {
				seen++
				ok := len(here) == 0 && all.has(n)
				for _, sl := range here {
					if ok = sl.nums.has(n); ok {
						break
					}
				}
				if !ok {
					where := "no number of " + strings.TrimSpace(ref)
					if len(here) > 0 {
						where = fmt.Sprintf("none of the %d source lines holding %q", len(here), keys)
					}
					return fmt.Errorf("%s: %s is in the row %q but in %s at that rounding", t, n, r, where)
				}
			}
		}
	}
	if seen == 0 {
		return fmt.Errorf("%s: \"from\" a source, but the table holds no number to check (\"written by hand\"?)", t)
	}
	return nil
}

// sourceLine is one table line of a source: its text, cells and numbers.
type sourceLine struct {
	text  string
	cells map[string]bool
	nums  *pool
}

func (sl sourceLine) hasAll(keys []string) bool {
	for _, k := range keys {
		if !strings.Contains(sl.text, k) {
			return false
		}
	}
	return true
}

// plain is a cell or line without Markdown emphasis and code marks.
func plain(s string) string {
	return strings.TrimSpace(strings.NewReplacer("**", "", "`", "", "\\*", "", "*", "").Replace(s))
}

func hasLetter(s string) bool {
	for _, r := range s {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return true
		}
	}
	return false
}

// pool is a set of printed numbers, searchable at a page's rounding.
type pool struct {
	have map[string]bool
	vals []float64
}

func newPool() *pool { return &pool{have: map[string]bool{}} }

func (p *pool) add(text string) {
	for _, n := range numbers(text) {
		if !p.have[n] {
			p.have[n] = true
			if v, err := strconv.ParseFloat(n, 64); err == nil {
				p.vals = append(p.vals, v)
			}
		}
	}
}

func (p *pool) sort() { slices.Sort(p.vals) }

func (p *pool) has(n string) bool {
	if !slices.IsSorted(p.vals) {
		p.sort()
	}
	return inSource(n, p.have, p.vals)
}

// columns resolves "columns: NAME | NAME" to header indices (nil: every
// column).
func columns(t Table, spec string) ([]int, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, nil
	}
	names, ok := strings.CutPrefix(spec, "columns:")
	if !ok {
		return nil, fmt.Errorf("%s: %q: want \"; columns: NAME | NAME\" after the sources", t, spec)
	}
	header := Cells(t.Rows[0])
	var out []int
	for _, n := range strings.Split(names, "|") {
		k := slices.Index(header, strings.TrimSpace(n))
		if k < 0 {
			return nil, fmt.Errorf("%s: no column %q in the header %q", t, strings.TrimSpace(n), t.Rows[0])
		}
		out = append(out, k)
	}
	return out, nil
}

// inSource reports whether the page's number n is a source number printed
// at n's rounding (or the same to within half its last digit).
func inSource(n string, have map[string]bool, vals []float64) bool {
	if have[n] {
		return true
	}
	v, err := strconv.ParseFloat(n, 64)
	if err != nil {
		return false
	}
	half := 0.5*math.Pow(10, -float64(decimals(n))) + 1e-12*math.Abs(v)
	i, _ := slices.BinarySearch(vals, v-half)
	return i < len(vals) && vals[i] <= v+half
}

var (
	measured = regexp.MustCompile(`measured (\d{4}-\d{2}-\d{2})`)
	commit   = regexp.MustCompile(`commit ([0-9a-f]{7,40})\b`)
)

// checkRecord: "record, measured YYYY-MM-DD[, commit HASH]…": the day is a
// day of the project (not after today), the commit exists when the
// checkout has its history.
func checkRecord(root string, t Table, c string) error {
	m := measured.FindStringSubmatch(c)
	if m == nil {
		return fmt.Errorf("%s: a record names the day it was measured: \"record, measured YYYY-MM-DD\"", t)
	}
	day, err := time.Parse("2006-01-02", m[1])
	if err != nil || day.After(time.Now().Add(24*time.Hour)) || day.Year() < 2025 {
		return fmt.Errorf("%s: record day %q is not a past day of the project", t, m[1])
	}
	if cm := commit.FindStringSubmatch(c); cm != nil {
		if _, err := os.Stat(filepath.Join(root, ".git")); err == nil {
			cmd := exec.Command("git", "-C", root, "cat-file", "-e", cm[1]+"^{commit}")
			if err := cmd.Run(); err != nil {
				return fmt.Errorf("%s: record's commit %s is not in this checkout's history", t, cm[1])
			}
		}
	}
	return nil
}

// Pages returns the repository's Markdown pages that doccheck covers: every
// README*.md outside third_party and the committed results folders (whose
// tables a command writes whole), relative to root.
func Pages(root string) ([]string, error) {
	var pages []string
	err := filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if info.IsDir() {
			switch info.Name() {
			case ".git", "third_party", "node_modules":
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasPrefix(info.Name(), "README") && strings.HasSuffix(info.Name(), ".md") {
			pages = append(pages, filepath.ToSlash(rel))
		}
		return nil
	})
	return pages, err
}

// kind is a comment's provenance kind, for counts.
func kind(c string) string {
	for _, k := range []string{"checked by", "copied from", "from", "numbers from", "record", "written by hand"} {
		if strings.HasPrefix(c, k) {
			return k
		}
	}
	return "none"
}
