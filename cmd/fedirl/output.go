package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
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
