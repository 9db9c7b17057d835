package fusion

import (
	"context"
	"fmt"
	"strings"
)

// Space says what a fusion method combines.
type Space int

const (
	// ThetaSpace methods combine the parameter vectors θ_i directly and need
	// no probe.
	ThetaSpace Space = iota
	// RewardSpace methods evaluate r̂_i = Φθ_i on the probe, combine the
	// shift-normalized measures T_σ(r̂_i), map the result back to a reward and
	// back-project it onto Φ; they need a probe.
	RewardSpace
)

// String returns "theta", "reward" or "joint".
func (s Space) String() string {
	switch s {
	case RewardSpace:
		return "reward"
	case JointSpace:
		return "joint"
	}
	return "theta"
}

// Input is what a Method fuses: K client parameter vectors with their
// normalized weights and the task's options and probe.
type Input struct {
	// Probe is the shared support; only RewardSpace methods read it.
	Probe Probe
	// Thetas are the K clients' parameters, all of one length and finite;
	// on the reward path of FuseContributions, Thetas[i] is nil for a client
	// that contributed its reward on the probe instead.
	Thetas [][]float64
	// Alpha are the clients' weights, non-negative and summing to one
	// (Weights), in the order of Thetas.
	Alpha []float64
	// Options are the validated options of the fusion.
	Options Options
}

// Method is one fusion rule of the registry: it fuses K inputs with weights
// into one output, in θ space or on the probe's reward space. FuseContext
// checks the inputs and normalizes the weights before calling Fuse, and fills
// Output.Method and Output.Distances after it.
type Method interface {
	// Name is the method's one name: what options, task specs, flags,
	// tables and plots print.
	Name() string
	// Space says whether the method works on θ or on the probe's rewards.
	Space() Space
	// Fuse returns the fused θ (and, for RewardSpace methods, Output.Reward).
	Fuse(ctx context.Context, in Input) (Output, error)
}

// registry is the set of fusion methods in the order Methods lists them: the
// paper's methods and their controls first, then the robust aggregators.
// Adding a method is one file implementing Method, one line here, and its
// tests.
var registry = []Method{
	meanMethod{},
	normalizedMean,
	barycenter,
	debiased,
	medianMethod{},
	trimmedMeanMethod{},
	geometricMedianMethod{},
	krumMethod{},
	krumMethod{multi: true},
	rewardMedian,
	rewardTrimmedMean,
	wassersteinMedian,
	jointMethod{},
}

// aliases maps accepted old spellings to registry names.
var aliases = map[string]string{
	// MethodBarycentric is how tasks and commands spelled the barycenter
	// before the registry; stored tasks keep working.
	MethodBarycentric: MethodBarycenter,
}

// Methods returns the registry's method names in their fixed order (studies
// and the CLI enumerate it). Aliases are not listed.
func Methods() []string {
	out := make([]string, len(registry))
	for i, m := range registry {
		out[i] = m.Name()
	}
	return out
}

// Canonical returns the registry name for name, resolving aliases
// ("barycentric" → "barycenter") and the empty name (→ "mean"); ok is false
// for an unknown name.
func Canonical(name string) (string, bool) {
	if name == "" {
		return MethodMean, true
	}
	if a, ok := aliases[name]; ok {
		name = a
	}
	for _, m := range registry {
		if m.Name() == name {
			return name, true
		}
	}
	return "", false
}

// Lookup returns the registered method called name (an alias or "" for the
// default are accepted), or an error listing the known names.
func Lookup(name string) (Method, error) {
	c, ok := Canonical(name)
	if !ok {
		return nil, fmt.Errorf("unknown fusion method %q: want one of %s (%q is accepted as an alias of %q)",
			name, strings.Join(Methods(), ", "), MethodBarycentric, MethodBarycenter)
	}
	for _, m := range registry {
		if m.Name() == c {
			return m, nil
		}
	}
	panic("unreachable")
}
