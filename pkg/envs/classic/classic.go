package classic

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"

	"github.com/fedirl/fedirl/pkg/envs"
)

// Stateful is implemented by every environment of this package: besides
// envs.Env it exposes the full internal state, so that a trajectory can be
// replayed from a given state and a model can be sampled on a lattice of states.
type Stateful interface {
	envs.Env
	// Name returns the Gymnasium id, e.g. "CartPole-v1".
	Name() string
	// StateDim returns the length of the internal state vector.
	StateDim() int
	// State copies the internal state into dst (allocated when nil or too
	// short) and returns it; see StateLabels for the layout.
	State(dst []float64) []float64
	// StateLabels names the coordinates of the internal state.
	StateLabels() []string
	// SetState sets the internal state and starts a new episode from it (the
	// TimeLimit step count restarts at zero); it returns an error if the
	// length is wrong or a value is not finite. The observation-noise source is
	// not reseeded.
	SetState(state []float64) error
	// Observe returns the observation of the current state (with observation
	// noise when configured), in the same buffer Reset and Step return.
	Observe() []float64
	// Params returns a copy of the physical and episode parameters in use.
	Params() map[string]float64
	// MaxEpisodeSteps returns the TimeLimit truncation length.
	MaxEpisodeSteps() int
	// SetNoiseSeed sets the seed of the observation-noise source; it takes
	// effect at the next Reset.
	SetNoiseSeed(seed uint64)
}

// ParamInfo documents one named parameter of an environment.
type ParamInfo struct {
	// Name is the key accepted by MakeWithParams.
	Name string `json:"name"`
	// Default is Gymnasium's value (or the neutral value for our extensions).
	Default float64 `json:"default"`
	// Doc says what the parameter is, with its unit.
	Doc string `json:"doc"`
}

// Info describes a registered environment.
type Info struct {
	// Name is the Gymnasium id.
	Name string `json:"name"`
	// Summary is one line on the task.
	Summary string `json:"summary"`
	// Params lists the accepted parameters in a stable order.
	Params []ParamInfo `json:"params"`
	// Client documents how ClientEnv perturbs the parameters for client i.
	Client string `json:"client"`
}

// ErrUnknownEnv is wrapped by errors about environment names that are not registered.
var ErrUnknownEnv = errors.New("unknown environment")

// ErrUnknownParam is wrapped by errors about parameter names an environment does not have.
var ErrUnknownParam = errors.New("unknown parameter")

type spec struct {
	info   Info
	build  func(p map[string]float64) (Stateful, error)
	client func(i int, p map[string]float64)
}

var registry = map[string]*spec{}

func register(s *spec) { registry[s.info.Name] = s }

// Names returns the registered environment ids in sorted order.
func Names() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// List returns the description of every registered environment, sorted by name.
func List() []Info {
	out := make([]Info, 0, len(registry))
	for _, n := range Names() {
		info := registry[n].info
		info.Params = slices.Clone(info.Params)
		out = append(out, info)
	}
	return out
}

func lookup(name string) (*spec, error) {
	s, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("environment %q: %w (valid: %s)", name, ErrUnknownEnv, strings.Join(Names(), ", "))
	}
	return s, nil
}

// Make returns the environment name with Gymnasium's default parameters,
// e.g. Make("CartPole-v1").
func Make(name string) (Stateful, error) {
	return MakeWithParams(name, nil)
}

// MakeWithParams returns the environment name with the named parameters
// overriding the defaults (see List for the names, defaults and units). An
// unknown name or a non-finite or out-of-range value is an error that lists the
// valid names.
func MakeWithParams(name string, params map[string]float64) (Stateful, error) {
	s, err := lookup(name)
	if err != nil {
		return nil, err
	}
	p, err := resolve(s, params)
	if err != nil {
		return nil, err
	}
	return s.build(p)
}

// DefaultParams returns the default parameters of environment name.
func DefaultParams(name string) (map[string]float64, error) {
	s, err := lookup(name)
	if err != nil {
		return nil, err
	}
	return resolve(s, nil)
}

// ClientParams returns the parameters of the paper's client i (i >= 0) for
// environment name: the defaults perturbed as documented in Info.Client.
func ClientParams(name string, i int) (map[string]float64, error) {
	s, err := lookup(name)
	if err != nil {
		return nil, err
	}
	if err := envs.CheckClient(i); err != nil {
		return nil, err
	}
	p, err := resolve(s, nil)
	if err != nil {
		return nil, err
	}
	s.client(i, p)
	return p, nil
}

// ClientEnv returns environment name as perturbed for the paper's client i
// (appendix "Setups"), including Gaussian observation noise of standard
// deviation 0.005·i drawn from a PCG source seeded with seed (and reseeded
// deterministically from seed and the episode seed at each Reset).
func ClientEnv(name string, i int, seed uint64) (Stateful, error) {
	p, err := ClientParams(name, i)
	if err != nil {
		return nil, err
	}
	e, err := registry[name].build(p)
	if err != nil {
		return nil, err
	}
	e.SetNoiseSeed(seed)
	return e, nil
}

// resolve merges user parameters into the defaults, checking names and values.
func resolve(s *spec, params map[string]float64) (map[string]float64, error) {
	p := make(map[string]float64, len(s.info.Params))
	for _, pi := range s.info.Params {
		p[pi.Name] = pi.Default
	}
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := params[k]
		if _, ok := p[k]; !ok {
			valid := make([]string, len(s.info.Params))
			for j, pi := range s.info.Params {
				valid[j] = pi.Name
			}
			return nil, fmt.Errorf("%s parameter %q: %w (valid: %s)", s.info.Name, k, ErrUnknownParam, strings.Join(valid, ", "))
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%s parameter %s=%v: must be finite", s.info.Name, k, v)
		}
		p[k] = v
	}
	return p, nil
}

// checkPositive returns an error unless every named parameter is > 0.
func checkPositive(env string, p map[string]float64, names ...string) error {
	for _, n := range names {
		if !(p[n] > 0) {
			return fmt.Errorf("%s parameter %s=%v: must be > 0", env, n, p[n])
		}
	}
	return nil
}

// checkNonNegative returns an error unless every named parameter is >= 0.
func checkNonNegative(env string, p map[string]float64, names ...string) error {
	for _, n := range names {
		if !(p[n] >= 0) {
			return fmt.Errorf("%s parameter %s=%v: must be >= 0", env, n, p[n])
		}
	}
	return nil
}

// Parameter names shared by all environments.
const (
	paramNoise    = "obs_noise_std"
	paramMaxSteps = "max_episode_steps"
)

func commonParams(maxSteps int) []ParamInfo {
	return []ParamInfo{
		{paramNoise, 0, "standard deviation of Gaussian noise added to each returned observation coordinate (not to the state)"},
		{paramMaxSteps, float64(maxSteps), "TimeLimit: the episode is truncated when this many steps have been taken"},
	}
}

// Streams of the PCG sources (second PCG seed word), fixed so that results
// never depend on anything but the seeds.
const (
	resetStream = 0x5265736574436c61 // "ResetCla"
	noiseStream = 0x4e6f697365436c61 // "NoiseCla"
)

// episode holds what every environment shares: the TimeLimit counter, the
// seeded sources for resets and observation noise, and the observation buffer.
type episode struct {
	name      string
	params    map[string]float64
	maxSteps  int
	elapsed   int
	started   bool
	done      bool
	noiseStd  float64
	noiseSeed uint64
	initPCG   rand.PCG
	initRNG   *rand.Rand
	noisePCG  rand.PCG
	noiseRNG  *rand.Rand
	obs       []float64
}

// init prepares the episode bookkeeping from resolved parameters.
func (e *episode) init(name string, p map[string]float64, obsDim int) error {
	if err := checkNonNegative(name, p, paramNoise); err != nil {
		return err
	}
	ms := p[paramMaxSteps]
	if ms < 1 || ms != math.Trunc(ms) || ms > math.MaxInt32 {
		return fmt.Errorf("%s parameter %s=%v: must be a positive integer", name, paramMaxSteps, ms)
	}
	e.name = name
	e.params = p
	e.maxSteps = int(ms)
	e.noiseStd = p[paramNoise]
	e.initRNG = rand.New(&e.initPCG)
	e.noiseRNG = rand.New(&e.noisePCG)
	e.obs = make([]float64, obsDim)
	return nil
}

// Name returns the Gymnasium id.
func (e *episode) Name() string { return e.name }

// MaxEpisodeSteps returns the TimeLimit truncation length.
func (e *episode) MaxEpisodeSteps() int { return e.maxSteps }

// SetNoiseSeed sets the seed of the observation-noise source; it takes effect at the next Reset.
func (e *episode) SetNoiseSeed(seed uint64) {
	e.noiseSeed = seed
	e.noisePCG.Seed(seed, noiseStream)
}

// Params returns a copy of the parameters in use.
func (e *episode) Params() map[string]float64 {
	out := make(map[string]float64, len(e.params))
	for k, v := range e.params {
		out[k] = v
	}
	return out
}

// beginReset seeds the sources for a new episode started by Reset(seed).
func (e *episode) beginReset(seed uint64) {
	e.initPCG.Seed(seed, resetStream)
	e.noisePCG.Seed(e.noiseSeed, seed^noiseStream)
	e.begin()
}

// begin starts an episode at step 0.
func (e *episode) begin() {
	e.elapsed = 0
	e.started = true
	e.done = false
}

// uniform draws from U[lo, hi), as numpy's Generator.uniform does.
func (e *episode) uniform(lo, hi float64) float64 {
	return lo + (hi-lo)*e.initRNG.Float64()
}

// beforeStep panics if the episode is not running.
func (e *episode) beforeStep() {
	if !e.started {
		panic("classic: " + e.name + ": Step called before Reset or SetState")
	}
	if e.done {
		panic("classic: " + e.name + ": Step called after the episode ended; call Reset")
	}
}

// afterStep applies the TimeLimit and records whether the episode ended.
func (e *episode) afterStep(terminated bool) (truncated bool) {
	e.elapsed++
	truncated = e.elapsed >= e.maxSteps
	e.done = terminated || truncated
	return truncated
}

// addNoise adds the observation noise to e.obs.
func (e *episode) addNoise() {
	if e.noiseStd == 0 {
		return
	}
	for i := range e.obs {
		e.obs[i] += e.noiseStd * e.noiseRNG.NormFloat64()
	}
}

// checkState validates a state vector for SetState.
func checkState(name string, state []float64, labels []string) error {
	if len(state) != len(labels) {
		return fmt.Errorf("%s state: got %d values, want %d (%s)", name, len(state), len(labels), strings.Join(labels, ", "))
	}
	for i, v := range state {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%s state %s=%v: must be finite", name, labels[i], v)
		}
	}
	return nil
}

// discreteAction decodes a Discrete(n) action, panicking on an invalid one
// (use CheckAction to validate user input first).
func discreteAction(name string, action []float64, n int) int {
	if len(action) != 1 {
		panic(fmt.Sprintf("classic: %s: action has %d values, want 1", name, len(action)))
	}
	a := action[0]
	k := int(a)
	if a != a || float64(k) != a || k < 0 || k >= n {
		panic(fmt.Sprintf("classic: %s: action %v is not one of 0..%d", name, a, n-1))
	}
	return k
}

// CheckAction returns an error describing why action is not valid for env's
// action space: a Discrete(N) action must be one integer in [0, N); a Box
// action must have the Box's dimension and finite values. Box values outside
// the bounds are valid: Step clips them as Gymnasium does.
func CheckAction(space envs.Space, action []float64) error {
	if len(action) != space.Dim() {
		return fmt.Errorf("action has %d values, want %d", len(action), space.Dim())
	}
	if space.IsDiscrete() {
		a := action[0]
		if a != math.Trunc(a) || a < 0 || a >= float64(space.N) {
			return fmt.Errorf("action %v out of range: must be an integer in 0..%d", a, space.N-1)
		}
		return nil
	}
	for i, a := range action {
		if math.IsNaN(a) || math.IsInf(a, 0) {
			return fmt.Errorf("action[%d]=%v: must be finite", i, a)
		}
	}
	return nil
}

// clip returns x limited to [lo, hi] as numpy.clip does (NaN stays NaN).
func clip(x, lo, hi float64) float64 {
	if x < lo {
		return lo
	}
	if x > hi {
		return hi
	}
	return x
}

// pyMod is Python's and numpy's floating-point remainder: the result has the
// sign of the divisor.
func pyMod(a, b float64) float64 {
	m := math.Mod(a, b)
	if m != 0 {
		if (b < 0) != (m < 0) {
			m += b
		}
	} else {
		m = math.Copysign(0, b)
	}
	return m
}

// f32 rounds x to float32 precision, as numpy's astype(np.float32) does.
func f32(x float64) float64 { return float64(float32(x)) }

// errorf is fmt.Errorf, named for brevity in constructors.
var errorf = fmt.Errorf
