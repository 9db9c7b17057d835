package gridworld

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"

	gw "github.com/fedirl/fedirl/pkg/envs/gridworld"
	"github.com/fedirl/fedirl/pkg/features"
	"github.com/fedirl/fedirl/pkg/irl"
	"github.com/fedirl/fedirl/pkg/mdp"
	"github.com/fedirl/fedirl/pkg/tasks"
)

// Random-stream purposes; a stream is keyed by (seed, size<<40 | purpose<<32 | index).
// (Evaluation streams are keyed by Config.evalKey instead.)
const (
	purposeDemo     = 1
	purposeWeak     = 3
	purposeAblation = 4
	purposeInit     = 5
	purposeWeakDemo = 6
	purposeNoise    = 7
	// purposePrivacy and purposePrivacyAblation key each client's DP noise
	// in Table 1 and Table 2 (the same client gets the same draw at every
	// weak fraction p).
	purposePrivacy         = 8
	purposePrivacyAblation = 9
	// purposeAttack keys a poisoning attacker's own draws (the Gaussian
	// attack's θ), by the attacker's client index.
	purposeAttack = 10
)

func stream(seed uint64, size, purpose, index int) *rand.Rand {
	return rand.New(rand.NewPCG(seed, uint64(size)<<40|uint64(purpose)<<32|uint64(index)))
}

// Env is one grid-world environment with everything the study needs: the
// simulator, its exact infinite-horizon discounted MDP and its feature matrix
// Φ on S×A (row s*4+a).
type Env struct {
	Spec gw.Spec
	Grid *gw.Grid
	MDP  *mdp.MDP
	Phi  *mat.Dense
}

// NewEnv builds the Env of spec with discount gamma.
func NewEnv(spec gw.Spec, gamma float64) (*Env, error) {
	g, err := gw.New(spec)
	if err != nil {
		return nil, err
	}
	m, err := g.MDP(gamma, 0)
	if err != nil {
		return nil, err
	}
	phi, err := tasks.GridFeatures(spec)
	if err != nil {
		return nil, err
	}
	return &Env{Spec: spec, Grid: g, MDP: m, Phi: phi}, nil
}

// GreedyPolicy returns the deterministic policy that is optimal for the
// reward Φθ in the environment's exact dynamics (value iteration to a
// sup-norm change of 1e-9; ties go to the lowest action index).
func (e *Env) GreedyPolicy(theta []float64) []int {
	ws := mdp.NewWorkspace(e.MDP, mdp.Options{Workers: 1, Tol: 1e-9})
	defer ws.Close()
	v := ws.ValueIteration(nil, features.Reward(nil, e.Phi, theta))
	return mdp.Greedy(nil, v.Q, e.MDP.NumActions)
}

// padLength returns P with γ^P ≤ 1e-6: demonstrations are continued in their
// absorbing cell up to P steps so their discounted feature expectations match
// the infinite-horizon model.
func padLength(gamma float64) int {
	return int(math.Ceil(math.Log(1e-6) / math.Log(gamma)))
}

// Demonstrations samples n expert trajectories of policy from uniformly drawn
// start cells. Each runs P = padLength(γ) steps in the absorbing chain: after
// the goal or an obstacle the agent stays there (action 0). It also returns
// the number of steps taken before termination, summed over trajectories.
func (e *Env) Demonstrations(rng *rand.Rand, policy []int, n int) ([]irl.Trajectory, int) {
	return e.NoisyDemonstrations(rng, policy, n, 0)
}

// NoisyDemonstrations is Demonstrations with an ε-greedy expert: at each
// non-terminal step, with probability eps the action is drawn uniformly
// instead of taken from policy. With eps = 0 it draws exactly what
// Demonstrations draws.
func (e *Env) NoisyDemonstrations(rng *rand.Rand, policy []int, n int, eps float64) ([]irl.Trajectory, int) {
	P := padLength(e.MDP.Gamma)
	out := make([]irl.Trajectory, n)
	live := 0
	for i := range out {
		s := e.Grid.SampleStart(rng)
		tr := irl.Trajectory{States: make([]int, 0, P+1), Actions: make([]int, 0, P)}
		for range P {
			a := 0
			if !e.Grid.IsTerminal(s) {
				a = policy[s]
				if eps > 0 && rng.Float64() < eps {
					a = rng.IntN(e.MDP.NumActions)
				}
				live++
			}
			tr.States = append(tr.States, s)
			tr.Actions = append(tr.Actions, a)
			s = e.Grid.Sample(rng, s, a)
		}
		tr.States = append(tr.States, s)
		out[i] = tr
	}
	return out, live
}

// LocalIRL runs the client's MaxEnt IRL with the configured hyperparameters
// and an iteration budget; theta0 (nil: zeros) is the starting θ.
func (e *Env) LocalIRL(ctx context.Context, demos []irl.Trajectory, c IRLConfig, budget int, theta0 []float64) (irl.Result, error) {
	cfg := c.config(budget)
	cfg.Theta0 = theta0
	res, err := irl.MaxEnt(ctx, e.MDP, e.Phi, demos, cfg)
	if err != nil {
		return res, fmt.Errorf("MaxEnt IRL on grid %d: %w", e.Spec.Size, err)
	}
	return res, nil
}

// envConfig returns the environments entry of a grid size (obstacles, slip,
// clients, held-out environments), or the family defaults when the size is
// not listed.
func (c Config) envConfig(size int) EnvConfig {
	for _, ec := range c.Environments {
		if ec.GridSize == size {
			return ec
		}
	}
	return EnvConfig{GridSize: size, NumberOfClients: gw.DefaultClients(size)}
}

// ClientTask rebuilds client i's environment and expert demonstrations of
// the study cell (grid size, seed) exactly as GridWorld does, for export.
// The grid size's EnvConfig is taken from c.Environments when listed there,
// else the family defaults (gw.DefaultClients clients) are used; clients > 0
// overrides the cell's number of clients (a federation of another size on the
// same family). A client index outside the cell's clients is an error.
func (c Config) ClientTask(size, client, clients int, seed uint64) (*Env, []irl.Trajectory, error) {
	e := c.envConfig(size)
	if clients > 0 {
		e.NumberOfClients = clients
	}
	if client < 0 || client >= e.NumberOfClients {
		return nil, nil, fmt.Errorf("client %d out of range: the %d×%d study has clients 0..%d", client, size, size, e.NumberOfClients-1)
	}
	spec, err := c.family(e).Client(seed, client)
	if err != nil {
		return nil, nil, err
	}
	env, err := NewEnv(spec, c.Expert.DiscountFactor)
	if err != nil {
		return nil, nil, err
	}
	pol := env.GreedyPolicy(c.Expert.TrueReward)
	demos, _ := env.Demonstrations(stream(seed, size, purposeDemo, client), pol, c.Expert.EpisodesPerClient)
	return env, demos, nil
}
