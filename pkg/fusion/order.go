package fusion

import (
	"cmp"
	"slices"
)

// orderStats holds the scratch of the weighted order statistics (median,
// trimmed mean) computed coordinate by coordinate.
type orderStats struct {
	// u are the weights divided by their maximum, so that uniform weights
	// are all exactly 1 and every cumulative sum below is an exact integer.
	u   []float64
	idx []int
}

func newOrderStats(alpha []float64) *orderStats {
	top := slices.Max(alpha)
	s := &orderStats{u: make([]float64, len(alpha)), idx: make([]int, len(alpha))}
	for i, a := range alpha {
		s.u[i] = a / top
	}
	return s
}

// sort orders s.idx by v (ties by client index, so results are reproducible).
func (s *orderStats) sort(v []float64) {
	for i := range s.idx {
		s.idx[i] = i
	}
	slices.SortFunc(s.idx, func(a, b int) int {
		if c := cmp.Compare(v[a], v[b]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
}

// median returns the weighted median of v: the midpoint of the lower weighted
// median (the smallest v_j whose weight with everything below it reaches the
// weight above it) and the upper one (the largest v_j whose weight with
// everything above it reaches the weight below it). With uniform weights it
// is the ordinary median (the mean of the two middle values for even K);
// zero-weight entries never matter.
func (s *orderStats) median(v []float64) float64 {
	s.sort(v)
	k := len(v)
	total := 0.0
	for _, u := range s.u {
		total += u
	}
	lo, hi := 0.0, 0.0
	below := 0.0
	for _, i := range s.idx {
		below += s.u[i]
		if below >= total-below {
			lo = v[i]
			break
		}
	}
	above := 0.0
	for j := k - 1; j >= 0; j-- {
		i := s.idx[j]
		above += s.u[i]
		if above >= total-above {
			hi = v[i]
			break
		}
	}
	return lo + (hi-lo)/2
}

// trimmedMean returns the weighted trimmed mean of v: the weighted mean
// after removing weight cut (in the units of s.u, where the heaviest client
// weighs 1; β·W for the β-trimmed mean, W the total) from each tail of the
// sorted values, an entry on a cut keeping the part of its weight inside.
// With uniform weights and an integer cut it drops the cut smallest and
// largest values and averages the rest; cut = 0 is the weighted mean.
func (s *orderStats) trimmedMean(v []float64, cut float64) float64 {
	s.sort(v)
	total := 0.0
	for _, u := range s.u {
		total += u
	}
	cutLo, cutHi := cut, total-cut
	a, num, den := 0.0, 0.0, 0.0
	for _, i := range s.idx {
		b := a + s.u[i]
		if keep := min(b, cutHi) - max(a, cutLo); keep > 0 {
			num += keep * v[i]
			den += keep
		}
		a = b
	}
	return num / den
}

// coordinatewise writes stat of the K vectors' j-th entries into dst[j].
func coordinatewise(vecs [][]float64, stat func(col []float64) float64) []float64 {
	dst := make([]float64, len(vecs[0]))
	col := make([]float64, len(vecs))
	for j := range dst {
		for i, v := range vecs {
			col[i] = v[j]
		}
		dst[j] = stat(col)
	}
	return dst
}
