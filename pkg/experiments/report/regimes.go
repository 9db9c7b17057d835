package report

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// Regime is one pre-declared study variant of a sweep: a name, a one-line
// rationale and config overrides (keys as in the study's config) applied
// over the sweep's base config. The studies' sweeps share this format.
type Regime struct {
	Name      string    `yaml:"name" json:"name"`
	Rationale string    `yaml:"rationale" json:"rationale"`
	Overrides yaml.Node `yaml:"overrides" json:"-"`
}

var regimeName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)

// ValidName reports whether name can name a regime (or another entry of a
// pre-declared file that becomes a folder): lower-case letters, digits, '.',
// '_' and '-', not starting with a punctuation mark.
func ValidName(name string) bool { return regimeName.MatchString(name) }

// LoadRegimes parses a regimes file (a YAML document with a `regimes` list)
// named src in errors. Every regime needs a unique file-system-safe name
// and a rationale, and check (the study's: do the overrides give a valid
// config?) must accept it.
func LoadRegimes(data []byte, src string, check func(Regime) error) ([]Regime, error) {
	var doc struct {
		Regimes []Regime `yaml:"regimes"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("regimes %s: %w", src, err)
	}
	if len(doc.Regimes) == 0 {
		return nil, fmt.Errorf("regimes %s: no regimes (want a top-level `regimes:` list)", src)
	}
	seen := map[string]bool{}
	for i, r := range doc.Regimes {
		switch {
		case !ValidName(r.Name):
			return nil, fmt.Errorf("regimes %s: regimes[%d].name = %q, want lower-case letters, digits, '.', '_' or '-'", src, i, r.Name)
		case seen[r.Name]:
			return nil, fmt.Errorf("regimes %s: regimes[%d].name %q used twice", src, i, r.Name)
		case strings.TrimSpace(r.Rationale) == "":
			return nil, fmt.Errorf("regimes %s: regime %q has no rationale", src, r.Name)
		}
		seen[r.Name] = true
		if err := check(r); err != nil {
			return nil, fmt.Errorf("regimes %s: %w", src, err)
		}
	}
	return doc.Regimes, nil
}

// Decode decodes the regime's overrides into dst (a config already holding
// the base values), refusing unknown keys; errors name the regime, and
// explain (when not nil) may rewrite a decoding error from the overrides'
// YAML, e.g. to name the key at fault.
func (r Regime) Decode(dst any, explain func(data []byte, err error) error) error {
	if r.Overrides.Kind == 0 {
		return nil
	}
	data, err := yaml.Marshal(&r.Overrides)
	if err != nil {
		return fmt.Errorf("regime %q: overrides: %w", r.Name, err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(dst); err != nil && !errors.Is(err, io.EOF) {
		if explain != nil {
			err = explain(data, err)
		}
		return fmt.Errorf("regime %q: overrides: %w", r.Name, err)
	}
	return nil
}

// OverridesYAML returns the regime's overrides as YAML (empty when it has
// none), without the file's comments: a comment that follows a regime's last
// key belongs to the file (e.g. the next block's heading), not to the regime.
func (r Regime) OverridesYAML() string {
	if r.Overrides.Kind == 0 {
		return ""
	}
	b, err := yaml.Marshal(uncommented(&r.Overrides))
	if err != nil {
		return ""
	}
	return string(b)
}

// uncommented returns a deep copy of n without head, line or foot comments.
func uncommented(n *yaml.Node) *yaml.Node {
	c := *n
	c.HeadComment, c.LineComment, c.FootComment = "", "", ""
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, k := range n.Content {
		c.Content[i] = uncommented(k)
	}
	return &c
}
