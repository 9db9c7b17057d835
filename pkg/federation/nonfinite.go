package federation

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// nonFiniteMark is the string NonFiniteJSON puts in place of the first
// non-finite token (lengthened until data does not contain it).
const nonFiniteMark = "fedirl:non-finite"

// NonFiniteJSON finds the first NaN, Infinity or -Infinity outside a JSON
// string in data (as Python's json.dump writes them by default; JSON has no
// such numbers) and returns its place as a path (probe.points[12][3]) and
// the token; ok is false when there is none or data is not otherwise JSON.
func NonFiniteJSON(data []byte) (path, tok string, ok bool) {
	mark := nonFiniteMark
	for bytes.Contains(data, []byte(mark)) {
		mark += "!"
	}
	var out bytes.Buffer
	out.Grow(len(data) + len(mark) + 2)
	prev := 0
	scanNonFinite(data, func(at int, t string) bool {
		out.Write(data[prev:at])
		if tok == "" {
			tok = t
			out.WriteString(`"` + mark + `"`)
		} else {
			out.WriteByte('0')
		}
		prev = at + len(t)
		return true
	})
	out.Write(data[prev:])
	if tok == "" {
		return "", "", false
	}
	dec := json.NewDecoder(&out)
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", "", false
	}
	path, ok = findMark(v, "", mark)
	if path == "" || path[0] == '[' {
		path = "$" + path // the top-level value, or an index into it
	}
	return path, tok, ok
}

// FirstNonFinite returns the byte offset and the token of the first NaN,
// Infinity or -Infinity outside a JSON string in data.
func FirstNonFinite(data []byte) (at int, tok string, ok bool) {
	scanNonFinite(data, func(i int, t string) bool {
		at, tok, ok = i, t, true
		return false
	})
	return at, tok, ok
}

// scanNonFinite calls visit with the offset and token of each NaN, Infinity
// and -Infinity outside a JSON string in data, in order, until visit
// returns false.
func scanNonFinite(data []byte, visit func(at int, tok string) bool) {
	inStr, esc := false, false
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch {
		case inStr && esc:
			esc = false
		case inStr && c == '\\':
			esc = true
		case inStr && c == '"':
			inStr = false
		case inStr:
		case c == '"':
			inStr = true
		default:
			for _, t := range []string{"NaN", "-Infinity", "Infinity"} {
				if bytes.HasPrefix(data[i:], []byte(t)) {
					if !visit(i, t) {
						return
					}
					i += len(t) - 1
					break
				}
			}
		}
	}
}

// findMark returns the path of the string mark in v.
func findMark(v any, at, mark string) (string, bool) {
	switch v := v.(type) {
	case string:
		return at, v == mark
	case []any:
		for i, e := range v {
			if p, ok := findMark(e, at+"["+strconv.Itoa(i)+"]", mark); ok {
				return p, true
			}
		}
	case map[string]any:
		for k, e := range v {
			next := k
			if at != "" {
				next = at + "." + k
			}
			if p, ok := findMark(e, next, mark); ok {
				return p, true
			}
		}
	}
	return "", false
}
