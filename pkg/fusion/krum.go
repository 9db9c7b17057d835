package fusion

import (
	"context"
	"fmt"
	"slices"
)

// krumMethod is MethodKrum (multi false) and MethodMultiKrum (multi true),
// Blanchard et al. 2017 (Flower's Krum). With f = Options.Byzantine (absent:
// the largest f with K > 2f + 2, ⌊(K − 3)/2⌋), client i's score is the sum of
// its squared Euclidean distances to its K − f − 2 nearest other clients;
// krum returns the θ of the lowest score (ties: the lowest client index),
// multi-krum the α-weighted mean of the m = K − f lowest-scored clients' θ.
// Clients of weight 0 are left out before scoring (K counts the others);
// otherwise the weights enter only multi-krum's average.
//
// What it bounds: with K > 2f + 2 and at most f Byzantine clients, the chosen
// θ lies within a bounded distance of the honest clients' (Blanchard et al.,
// Lemma 1: the distance scales with the honest spread, not with what the
// attackers send); f ≥ K/2 − 1 is refused. krum returns one client's θ and
// discards the others' information; multi-krum averages the m best, so one
// undetected attacker among them enters with its weight.
type krumMethod struct{ multi bool }

func (m krumMethod) Name() string {
	if m.multi {
		return MethodMultiKrum
	}
	return MethodKrum
}

func (krumMethod) Space() Space { return ThetaSpace }

func (m krumMethod) Fuse(_ context.Context, in Input) (Output, error) {
	var keep []int
	for i, a := range in.Alpha {
		if a > 0 {
			keep = append(keep, i)
		}
	}
	k := len(keep)
	f := (k - 3) / 2
	if in.Options.Byzantine != nil {
		f = *in.Options.Byzantine
	}
	if k < 3 || k <= 2*f+2 {
		return Output{}, fmt.Errorf("fusion: %s with f = %d Byzantine clients needs K > 2f + 2 = %d clients of positive weight, got %d", m.Name(), f, 2*f+2, k)
	}
	scores := krumScores(in.Thetas, keep, f)
	order := make([]int, k)
	for j := range order {
		order[j] = j
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case scores[a] < scores[b]:
			return -1
		case scores[a] > scores[b]:
			return 1
		}
		return 0
	})
	if !m.multi {
		return Output{Theta: slices.Clone(in.Thetas[keep[order[0]]])}, nil
	}
	sel := order[:k-f]
	slices.Sort(sel) // average in client order
	out := make([]float64, len(in.Thetas[0]))
	total := 0.0
	for _, j := range sel {
		total += in.Alpha[keep[j]]
	}
	for _, j := range sel {
		for c, v := range in.Thetas[keep[j]] {
			out[c] += in.Alpha[keep[j]] / total * v
		}
	}
	return Output{Theta: out}, nil
}

// krumScores returns, for each client keep[j], the sum of its squared
// distances to its k − f − 2 nearest others among keep.
func krumScores(thetas [][]float64, keep []int, f int) []float64 {
	k := len(keep)
	scores := make([]float64, k)
	ds := make([]float64, 0, k-1)
	for a, i := range keep {
		ds = ds[:0]
		for b, j := range keep {
			if a == b {
				continue
			}
			s := 0.0
			for c, v := range thetas[i] {
				s += (v - thetas[j][c]) * (v - thetas[j][c])
			}
			ds = append(ds, s)
		}
		slices.Sort(ds)
		for _, s := range ds[:k-f-2] {
			scores[a] += s
		}
	}
	return scores
}
