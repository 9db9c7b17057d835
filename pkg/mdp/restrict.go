package mdp

import "fmt"

// Reachable returns, in increasing order, the states reachable from the
// support of dist (length S: every s with dist[s] > 0 is a start) by
// transitions of positive probability under any action; terminal states
// are reached but have no successors. The set is closed under the
// transitions, so every quantity that only involves states reachable from
// those starts (values at the starts, visits, occupancies) is the same on
// Restrict(Reachable(dist)) as on m.
func (m *MDP) Reachable(dist []float64) []int {
	S, A := m.NumStates, m.NumActions
	if len(dist) != S {
		panic(fmt.Sprintf("mdp: Reachable: distribution has length %d, want %d", len(dist), S))
	}
	seen := make([]bool, S)
	var stack []int
	for s, p := range dist {
		if p > 0 {
			seen[s] = true
			stack = append(stack, s)
		}
	}
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if m.IsTerminal(s) {
			continue
		}
		for i := m.RowPtr[s*A]; i < m.RowPtr[(s+1)*A]; i++ {
			if n := m.Next[i]; m.Prob[i] > 0 && !seen[n] {
				seen[n] = true
				stack = append(stack, int(n))
			}
		}
	}
	var out []int
	for s, ok := range seen {
		if ok {
			out = append(out, s)
		}
	}
	return out
}

// Restrict returns the MDP on the given states (increasing, closed under
// m's positive-probability transitions, as Reachable returns them), state
// i of the result being states[i], with init (length S of m, zero off the
// states) as its initial distribution. It returns an error naming the
// first transition that leaves the set.
func (m *MDP) Restrict(states []int, init []float64) (*MDP, error) {
	S, A := m.NumStates, m.NumActions
	if len(init) != S {
		return nil, fmt.Errorf("mdp: Restrict: init has length %d, want %d", len(init), S)
	}
	index := make([]int32, S)
	for i := range index {
		index[i] = -1
	}
	for i, s := range states {
		if s < 0 || s >= S || (i > 0 && s <= states[i-1]) {
			return nil, fmt.Errorf("mdp: Restrict: states must be increasing in [0,%d), got %d at %d", S, s, i)
		}
		index[s] = int32(i)
	}
	n := len(states)
	out := &MDP{NumStates: n, NumActions: A, Gamma: m.Gamma, Horizon: m.Horizon,
		RowPtr: make([]int, n*A+1), Init: make([]float64, n)}
	if m.Terminal != nil {
		out.Terminal = make([]bool, n)
	}
	for s, p := range init {
		if p != 0 && index[s] < 0 {
			return nil, fmt.Errorf("mdp: Restrict: init has mass %v on state %d outside the set", p, s)
		}
	}
	for i, s := range states {
		out.Init[i] = init[s]
		if m.IsTerminal(s) {
			out.Terminal[i] = true
		}
		for a := range A {
			k := s*A + a
			if !m.IsTerminal(s) {
				for j := m.RowPtr[k]; j < m.RowPtr[k+1]; j++ {
					if m.Prob[j] == 0 {
						continue
					}
					ni := index[m.Next[j]]
					if ni < 0 {
						return nil, fmt.Errorf("mdp: Restrict: state %d action %d leads to state %d outside the set", s, a, m.Next[j])
					}
					out.Next = append(out.Next, ni)
					out.Prob = append(out.Prob, m.Prob[j])
				}
			}
			out.RowPtr[i*A+a+1] = len(out.Next)
		}
	}
	return out, nil
}
