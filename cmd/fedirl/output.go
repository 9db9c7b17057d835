package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// writeJSON writes v as indented JSON to path, or to stdout when path is "" or "-".
func writeJSON(path string, v any) error {
	var w io.Writer = os.Stdout
	if path != "" && path != "-" {
		f, err := os.Create(path)
		if err != nil {
			return fmt.Errorf("creating output %s: %w", path, err)
		}
		defer f.Close()
		w = f
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("writing JSON to %q: %w", path, err)
	}
	return nil
}
