// Package tasks is the seam between the federation and the environments: one
// file per environment family says how a task of that family is served
// (gridworld.go, control.go, and lattice.go: the generic family whose lattice
// and feature matrix are data in the task spec, for problems fedirl does not
// know).
//
// A Family turns the family-specific JSON of a federation.TaskSpec into what
// the two sides need: the server's probe (lattice and feature matrix Φ on
// which rewards are fused) and, for a client, a learner on its own model and
// demonstrations. Fuser is the server's federation.Fuser for every registered
// family, and Learner decoding reads the task's irl section.
//
// The packages below this one (federation, fusion, ot, lattice) know no
// environment; this package is where environments, IRL and fusion meet. It
// runs no study (pkg/experiments) and parses no flags (cmd/fedirl).
package tasks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/fedirl/fedirl/pkg/federation"
	"github.com/fedirl/fedirl/pkg/fusion"
	"github.com/fedirl/fedirl/pkg/irl"
)

// Family serves the tasks of one environment family.
type Family interface {
	// Name is the value of TaskSpec.EnvFamily this family serves.
	Name() string
	// Probe builds the server's probe from the task's probe JSON; the
	// feature matrix is built by the same code the clients learn with.
	Probe(spec json.RawMessage) (fusion.Probe, error)
}

var families = map[string]Family{}

// Register makes a family available by name; it panics on a duplicate name
// (a programming error at init time).
func Register(f Family) {
	if _, dup := families[f.Name()]; dup {
		panic("tasks: family " + f.Name() + " registered twice")
	}
	families[f.Name()] = f
}

// Names returns the registered family names, sorted.
func Names() []string {
	out := make([]string, 0, len(families))
	for n := range families {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Lookup returns the family named name, or an error naming the field and the
// valid names.
func Lookup(name string) (Family, error) {
	f, ok := families[name]
	if !ok {
		return nil, fmt.Errorf("env_family %q: unknown task family (known: %s)", name, strings.Join(Names(), ", "))
	}
	return f, nil
}

// DecodeIRL reads a task's irl section into irl.Config (empty means the
// zero Config, i.e. irl's defaults), refusing unknown keys and θ0, which a
// task cannot set (warm starts come from the federation).
func DecodeIRL(b json.RawMessage) (irl.Config, error) {
	var c irl.Config
	if len(bytes.TrimSpace(b)) == 0 {
		return c, nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return irl.Config{}, fmt.Errorf("irl: %w", err)
	}
	if c.Theta0 != nil {
		return irl.Config{}, fmt.Errorf("irl.theta0: a task cannot set the starting θ")
	}
	if _, err := c.Resolve(); err != nil {
		return irl.Config{}, err
	}
	return c, nil
}

// EncodeIRL writes c as a task's irl section.
func EncodeIRL(c irl.Config) (json.RawMessage, error) {
	c.Theta0 = nil
	return json.Marshal(c)
}

// EncodeFusion writes o as a task's fusion section.
func EncodeFusion(o fusion.Options) (json.RawMessage, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	return json.Marshal(o)
}

// ProbeOf validates spec's family sections and builds its probe, checking
// that Φ has theta_dim columns.
func ProbeOf(spec federation.TaskSpec) (fusion.Probe, fusion.Options, error) {
	f, err := Lookup(spec.EnvFamily)
	if err != nil {
		return fusion.Probe{}, fusion.Options{}, err
	}
	opt, err := fusion.DecodeOptions(spec.Fusion)
	if err != nil {
		return fusion.Probe{}, fusion.Options{}, err
	}
	if _, err := DecodeIRL(spec.IRL); err != nil {
		return fusion.Probe{}, fusion.Options{}, err
	}
	p, err := f.Probe(spec.Probe)
	if err != nil {
		return fusion.Probe{}, fusion.Options{}, fmt.Errorf("probe: %w", err)
	}
	if err := p.Validate(); err != nil {
		return fusion.Probe{}, fusion.Options{}, fmt.Errorf("probe: %w", err)
	}
	if _, d := p.Phi.Dims(); d != spec.ThetaDim {
		return fusion.Probe{}, fusion.Options{}, fmt.Errorf("theta_dim %d: family %s's features have %d columns", spec.ThetaDim, spec.EnvFamily, d)
	}
	return p, opt, nil
}
