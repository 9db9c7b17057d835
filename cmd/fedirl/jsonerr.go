package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/fedirl/fedirl/pkg/federation"
)

// jsonError rewrites a JSON decoding error of data so that it says where
// (line and column) and, when the cause is a NaN or an infinity written as
// Python's json.dump writes them by default (NaN, Infinity, -Infinity), says
// that: JSON has no such numbers and fedirl wants finite ones.
func jsonError(data []byte, err error) error {
	if at, tok, ok := federation.FirstNonFinite(data); ok {
		line, col := position(data, int64(at+1))
		at := ""
		if path, _, ok := federation.NonFiniteJSON(data); ok {
			at = " at " + path // e.g. probe.points[12][3]
		}
		return fmt.Errorf("line %d column %d: %s is not a JSON number%s (Python's json.dump writes NaN and infinities so by default); fedirl wants finite numbers: remove the non-finite value (json.dump(..., allow_nan=False) finds them): %w", line, col, tok, at, err)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line, col := position(data, se.Offset)
		return fmt.Errorf("line %d column %d: %w", line, col, err)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		line, col := position(data, te.Offset)
		return fmt.Errorf("line %d column %d: %w", line, col, err)
	}
	return err
}

// position turns a 1-based byte offset into a line and column.
func position(data []byte, off int64) (line, col int) {
	off = min(max(off, 1), int64(len(data)))
	line = 1 + bytes.Count(data[:off-1], []byte("\n"))
	col = int(off) - bytes.LastIndexByte(data[:off-1], '\n') - 1
	return line, col
}
