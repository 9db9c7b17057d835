package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// createOutput opens the output named by path: stdout when path is "" or "-",
// otherwise a new file. The returned close function reports the file's close
// error (the last chance to learn that buffered data did not reach the disk);
// for stdout it does nothing. Calling it again is a no-op, so it may also be
// deferred for error paths.
func createOutput(path string) (io.Writer, func() error, error) {
	if path == "" || path == "-" {
		return os.Stdout, func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, fmt.Errorf("creating output %s: %w", path, err)
	}
	closed := false
	return f, func() error {
		if closed {
			return nil
		}
		closed = true
		if err := f.Close(); err != nil {
			return fmt.Errorf("closing output %s: %w", path, err)
		}
		return nil
	}, nil
}

// writeJSON writes v as indented JSON to path, or to stdout when path is "" or "-".
func writeJSON(path string, v any) error {
	w, closeOut, err := createOutput(path)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		closeOut()
		return fmt.Errorf("writing JSON to %q: %w", path, err)
	}
	return closeOut()
}

// runSignatures name the files by which a folder is recognised as the
// output of a command that writes no log.txt.
var runSignatures = []struct {
	kind  string
	files []string
}{
	{"fedirl ppo train", []string{"policy.json", "curve.csv"}},
	{"fedirl gridworld export", []string{"mdp.json", "truth.json"}},
	{"fedirl ppo study", []string{"summary.md", "summary.csv", "summary.json"}},
}

// otherRun says which other command's run the folder dir holds ("" when
// none, or when it is kind's own): the command named by the first line of
// its log.txt (every study writes "fedirl <command>…" there first), else by
// runSignatures.
func otherRun(dir, kind string) string {
	if b, err := os.ReadFile(filepath.Join(dir, "log.txt")); err == nil {
		first, _, _ := strings.Cut(string(b), "\n")
		if strings.HasPrefix(first, "fedirl ") {
			if strings.HasPrefix(first, kind+" ") || strings.HasPrefix(first, kind+":") {
				return ""
			}
			words := strings.Fields(strings.NewReplacer(":", " ", "(", " ").Replace(first))
			if len(words) >= 3 {
				return strings.Join(words[:3], " ")
			}
			return first
		}
	}
	for _, sig := range runSignatures {
		if sig.kind == kind {
			continue
		}
		all := true
		for _, f := range sig.files {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				all = false
				break
			}
		}
		if all {
			return sig.kind
		}
	}
	return ""
}

// checkRunFolder refuses --out out for a run of kind when it holds another
// command's run, so two studies never mix their files in one folder.
func checkRunFolder(out, kind string) error {
	if other := otherRun(out, kind); other != "" {
		return fmt.Errorf("--out %s holds a `%s` run: give this `%s` run another folder (or remove that one)", out, other, kind)
	}
	return nil
}
