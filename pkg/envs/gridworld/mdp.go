package gridworld

import (
	"fmt"

	"github.com/fedirl/fedirl/pkg/mdp"
)

// MDP returns the environment's exact dynamics as an mdp.MDP with discount
// gamma and the given horizon (0 = infinite), built with mdp.Builder. The
// initial distribution is uniform over Starts.
//
// Goal and obstacle cells are modelled as absorbing self-loops, not as
// mdp terminal states: a planner keeps collecting the reward of the cell it
// ended in, so a reward that is highest at the goal and low at obstacles
// makes reaching the goal good and collisions bad, and a constant reward
// offset changes no optimal policy. (With mdp's zero-value terminals, a
// reward that is negative everywhere would make crashing into the nearest
// obstacle optimal.)
func (g *Grid) MDP(gamma float64, horizon int) (*mdp.MDP, error) {
	n := g.NumStates()
	b := mdp.NewBuilder(n, NumActions)
	b.Gamma, b.Horizon = gamma, horizon
	b.Init = make([]float64, n)
	for _, s := range g.starts {
		b.Init[s] = 1 / float64(len(g.starts))
	}
	var buf []Transition
	for s := range n {
		for a := range NumActions {
			buf = g.Transitions(buf, s, a)
			for _, tr := range buf {
				b.AddTransition(s, a, tr.Next, tr.Prob)
			}
		}
	}
	m, err := b.Build()
	if err != nil {
		return nil, fmt.Errorf("gridworld: building MDP: %w", err)
	}
	return m, nil
}
