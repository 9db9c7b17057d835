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
// Two client learners implement federation.Learner (learner.go, sample.go):
// MaxEntLearner, MaxEnt IRL on the client's own lattice MDP (every family
// with a lattice; it also answers joint rounds), and SampleLearner, for a
// client with a simulator but no lattice model: sampleirl.Learn in the
// client's own simulator on the task's features as a map evaluable at any
// step (a control task's RBF features, a points task's rbf map), which
// answers no joint round. Both submit θ on the task's features, so their θ
// fuse together.
//
// The packages below this one (federation, fusion, ot, lattice) know no
// environment; this package is where environments, IRL and fusion meet. It
// runs no study (pkg/experiments) and parses no flags (cmd/fedirl).
package tasks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
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

// ProbeSizer is implemented by a family whose probe can be larger than its
// JSON (one that builds the lattice and Φ from a few numbers): ProbeSize
// returns the probe's points and feature count from the JSON without
// building anything, so that ProbeWithin can refuse a probe above the
// server's federation.Limits before building it. A family without it has
// its probe checked after building (its size is then bounded by the JSON's,
// federation.MaxProbeBytes).
type ProbeSizer interface {
	ProbeSize(spec json.RawMessage) (points, features int, err error)
}

// mulSat returns a·b for non-negative a and b, saturated at math.MaxInt.
func mulSat(a, b int) int {
	if a < 0 || b < 0 {
		return math.MaxInt
	}
	if a != 0 && b > math.MaxInt/a {
		return math.MaxInt
	}
	return a * b
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

// ProbeOf is ProbeWithin the default federation.Limits.
func ProbeOf(spec federation.TaskSpec) (fusion.Probe, fusion.Options, error) {
	return ProbeWithin(spec, federation.Limits{})
}

// ProbeWithin validates spec's family sections against lim (ε range and
// iteration budgets, then the probe's size from its JSON, before building
// it) and builds its probe, checking that Φ has theta_dim columns.
func ProbeWithin(spec federation.TaskSpec, lim federation.Limits) (fusion.Probe, fusion.Options, error) {
	return probeWithin(spec, lim, func(f Family) (fusion.Probe, error) { return f.Probe(spec.Probe) })
}

// probeWithin is ProbeWithin with the probe built by build (which may
// return a probe built before from equal JSON), after the checks.
func probeWithin(spec federation.TaskSpec, lim federation.Limits, build func(Family) (fusion.Probe, error)) (fusion.Probe, fusion.Options, error) {
	f, err := Lookup(spec.EnvFamily)
	if err != nil {
		return fusion.Probe{}, fusion.Options{}, err
	}
	opt, err := fusion.DecodeOptions(spec.Fusion)
	if err != nil {
		return fusion.Probe{}, fusion.Options{}, err
	}
	icfg, err := DecodeIRL(spec.IRL)
	if err != nil {
		return fusion.Probe{}, fusion.Options{}, err
	}
	if err := errors.Join(lim.CheckEpsilon("fusion.epsilon", opt.Eps),
		lim.CheckIterations(federation.FusionIterations, "fusion.max_iter", opt.MaxIter),
		lim.CheckIterations(federation.InnerIterations, "fusion.inner_iter", opt.InnerIter),
		lim.CheckIterations(federation.IRLIterations, "irl.max_iter", icfg.MaxIter)); err != nil {
		return fusion.Probe{}, fusion.Options{}, err
	}
	if wf, ok := f.(WeightFamily); ok {
		// θ is a model's parameter vector: no Φ to build or to fuse rewards on.
		n, err := wf.WeightDim(spec.Probe)
		if err != nil {
			return fusion.Probe{}, fusion.Options{}, fmt.Errorf("probe: %w", err)
		}
		if m, err := fusion.Lookup(opt.Method); err != nil {
			return fusion.Probe{}, fusion.Options{}, err
		} else if m.Space() != fusion.ThetaSpace {
			return fusion.Probe{}, fusion.Options{}, fmt.Errorf("fusion.method %q fuses rewards on a probe's features; family %s's θ are network weights with no feature map (use a θ-space method: mean is FedAvg)", opt.MethodName(), spec.EnvFamily)
		}
		if n != spec.ThetaDim {
			return fusion.Probe{}, fusion.Options{}, fmt.Errorf("theta_dim %d: family %s's network has %d weights", spec.ThetaDim, spec.EnvFamily, n)
		}
		p, err := build(f)
		if err != nil {
			return fusion.Probe{}, fusion.Options{}, fmt.Errorf("probe: %w", err)
		}
		return p, opt, nil
	}
	if s, ok := f.(ProbeSizer); ok {
		points, feats, err := s.ProbeSize(spec.Probe)
		if err != nil {
			return fusion.Probe{}, fusion.Options{}, fmt.Errorf("probe: %w", err)
		}
		if err := lim.CheckProbe(points, feats); err != nil {
			return fusion.Probe{}, fusion.Options{}, err
		}
	}
	p, err := build(f)
	if err != nil {
		return fusion.Probe{}, fusion.Options{}, fmt.Errorf("probe: %w", err)
	}
	if err := p.Validate(); err != nil {
		return fusion.Probe{}, fusion.Options{}, fmt.Errorf("probe: %w", err)
	}
	n, d := p.Phi.Dims()
	if err := lim.CheckProbe(n, d); err != nil {
		return fusion.Probe{}, fusion.Options{}, err
	}
	want := d
	if opt.MethodName() == fusion.MethodJoint && icfg.Absorbing {
		// a joint task's θ is the clients' objective's: with irl.absorbing
		// one more entry, the absorbing state's value θ_abs, last
		want = d + 1
	}
	if want != spec.ThetaDim {
		if want != d {
			return fusion.Probe{}, fusion.Options{}, fmt.Errorf("theta_dim %d: a joint task with irl.absorbing has family %s's %d feature columns and the absorbing value, %d", spec.ThetaDim, spec.EnvFamily, d, want)
		}
		return fusion.Probe{}, fusion.Options{}, fmt.Errorf("theta_dim %d: family %s's features have %d columns", spec.ThetaDim, spec.EnvFamily, d)
	}
	return p, opt, nil
}
