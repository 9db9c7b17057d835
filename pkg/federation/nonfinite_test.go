package federation

import (
	"strings"
	"testing"
)

// TestNonFiniteJSON: the path of the first NaN or infinity of a JSON text,
// outside strings, with the token as written.
func TestNonFiniteJSON(t *testing.T) {
	for _, c := range []struct{ in, path, tok string }{
		{`{"id": "NaN", "probe": {"points": [[0, 1], [2, NaN]], "phi": [[Infinity]]}}`, "probe.points[1][1]", "NaN"},
		{`{"a": [1, -Infinity]}`, "a[1]", "-Infinity"},
		{`NaN`, "$", "NaN"},
		{`[[1, 2], [Infinity]]`, "$[1][0]", "Infinity"},
	} {
		path, tok, ok := NonFiniteJSON([]byte(c.in))
		if !ok || path != c.path || tok != c.tok {
			t.Errorf("%s: %q %q %v, want %q %q", c.in, path, tok, ok, c.path, c.tok)
		}
	}
	for _, in := range []string{`{"a": "NaN"}`, `{"a": [1, 2]}`, `{"a": NaN`} {
		if path, tok, ok := NonFiniteJSON([]byte(in)); ok {
			t.Errorf("%s: found %q %q", in, path, tok)
		}
	}
}

// TestValidateNamesNaNInProbe: a task spec whose probe holds a NaN as
// Python's json.dump writes it (as over the CreateTask RPC) is refused
// naming NaN and its place.
func TestValidateNamesNaNInProbe(t *testing.T) {
	s := TaskSpec{ID: "t", ThetaDim: 1, Quorum: 1, Probe: []byte(`{"points": [[0, 1], [NaN, 2]], "phi": [[1], [2]]}`)}
	s.Normalize()
	err := s.Validate()
	if err == nil || !strings.Contains(err.Error(), "probe.points[1][0] = NaN") {
		t.Errorf("a probe with NaN: %v", err)
	}
}
