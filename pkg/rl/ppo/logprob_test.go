package ppo

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/fedirl/fedirl/pkg/approx"
)

// trainedPolicy returns a policy after a short run on the line environment,
// so that its networks, log-stds and observation statistics are not at
// their initial values.
func trainedPolicy(t *testing.T, discrete bool, seed uint64) (*Policy, Config) {
	t.Helper()
	cfg := Config{NEnvs: 2, NSteps: 64, BatchSize: 32, NEpochs: 2, NormalizeObs: true, Hidden: []int{8}}
	tr, err := NewTrainer(cfg, lineMaker(discrete, 20), Options{Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Learn(context.Background(), 256); err != nil {
		t.Fatal(err)
	}
	return tr.Policy(), cfg
}

// TestLogProbClosedForm: LogProb against the distributions written out
// independently from the actor's raw output: for a Discrete space
// exp(LogProb) is softmax(logits) (so the probabilities sum to one), for a
// Box space the Gaussian density exp(−(a−μ)²/2σ²)/(σ√2π); bad actions are
// errors.
func TestLogProbClosedForm(t *testing.T) {
	obs := []float64{0.7}
	for _, discrete := range []bool{true, false} {
		p, _ := trainedPolicy(t, discrete, 3)
		x := []float64{(obs[0] - p.ObsRMS.Mean[0]) / math.Sqrt(p.ObsRMS.Var[0]+obsEps)}
		out := slices.Clone(p.Actor.Forward(p.Actor.NewWorkspace(1), x, 1))
		if discrete {
			z, sum := 0.0, 0.0
			for _, v := range out {
				z += math.Exp(v)
			}
			for k := range out {
				lp, err := p.LogProb(obs, []float64{float64(k)})
				if err != nil {
					t.Fatal(err)
				}
				approx.Equal(t, "discrete probability", math.Exp(lp), math.Exp(out[k])/z, 1e-13, 0)
				sum += math.Exp(lp)
			}
			approx.Equal(t, "sum of probabilities", sum, 1, 1e-13, 0)
			for _, bad := range [][]float64{{3}, {-1}, {0.5}, {0, 1}} {
				if _, err := p.LogProb(obs, bad); err == nil {
					t.Errorf("Discrete action %v: no error", bad)
				}
			}
			continue
		}
		for _, a := range []float64{-0.9, 0, 0.4} {
			lp, err := p.LogProb(obs, []float64{a})
			if err != nil {
				t.Fatal(err)
			}
			sd := math.Exp(p.LogStd[0])
			want := math.Exp(-(a-out[0])*(a-out[0])/(2*sd*sd)) / (sd * math.Sqrt(2*math.Pi))
			approx.Equal(t, "Gaussian density", math.Exp(lp), want, 1e-13, 0)
		}
		if _, err := p.LogProb(obs, []float64{0, 0}); err == nil {
			t.Error("Box action of length 2: no error")
		}
	}
	p, _ := trainedPolicy(t, true, 3)
	if _, err := p.LogProb([]float64{1, 2}, []float64{0}); err == nil {
		t.Error("observation of length 2: no error")
	}
}

// TestInitPolicy: a trainer given Options.Init starts from a copy of that
// policy (the same bits before training, Init itself untouched after it),
// which a fresh trainer of the same seed does not; a policy of another
// shape is refused with an error naming what differs.
func TestInitPolicy(t *testing.T) {
	init, cfg := trainedPolicy(t, true, 5)
	before := slices.Concat(init.Actor.Params, init.Critic.Params, init.ObsRMS.Mean, init.ObsRMS.Var)
	tr, err := NewTrainer(cfg, lineMaker(true, 20), Options{Seed: 9, Init: init})
	if err != nil {
		t.Fatal(err)
	}
	p := tr.Policy()
	if !slices.Equal(p.Actor.Params, init.Actor.Params) || !slices.Equal(p.Critic.Params, init.Critic.Params) ||
		!slices.Equal(p.ObsRMS.Mean, init.ObsRMS.Mean) || p.ObsRMS.Count != init.ObsRMS.Count {
		t.Fatal("the trainer's policy is not a copy of Init")
	}
	fresh, err := NewTrainer(cfg, lineMaker(true, 20), Options{Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(fresh.Policy().Actor.Params, init.Actor.Params) {
		t.Fatal("a fresh trainer has Init's parameters: the test shows nothing")
	}
	if err := tr.Learn(context.Background(), 128); err != nil {
		t.Fatal(err)
	}
	if slices.Equal(p.Actor.Params, init.Actor.Params) {
		t.Error("training from Init changed nothing")
	}
	if after := slices.Concat(init.Actor.Params, init.Critic.Params, init.ObsRMS.Mean, init.ObsRMS.Var); !slices.Equal(after, before) {
		t.Error("training modified Init")
	}
	// The copy acts as Init does.
	rng1, rng2 := rand.New(rand.NewPCG(1, 2)), rand.New(rand.NewPCG(1, 2))
	c := init.Clone()
	a1, a2 := make([]float64, 1), make([]float64, 1)
	for _, x := range []float64{-1.2, 0, 0.3, 1.9} {
		if init.Act(a1, []float64{x}, rng1)[0] != c.Act(a2, []float64{x}, rng2)[0] {
			t.Errorf("Clone acts differently at %v", x)
		}
	}
	for name, edit := range map[string]func(c *Config){
		"actor":     func(c *Config) { c.Hidden = []int{4} },
		"normalise": func(c *Config) { c.NormalizeObs = false },
	} {
		c := cfg
		edit(&c)
		if _, err := NewTrainer(c, lineMaker(true, 20), Options{Init: init}); err == nil || !strings.Contains(err.Error(), "init policy") {
			t.Errorf("%s: err = %v, want the init policy's mismatch", name, err)
		}
	}
	if _, err := NewTrainer(cfg, lineMaker(false, 20), Options{Init: init}); err == nil {
		t.Error("a Discrete init policy on a Box environment: no error")
	}
}
