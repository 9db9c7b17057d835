package fusion

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Outlier scores (Output.OutlierScores): robust z-scores of each client's
// reward against the median client, computed before and independently of the
// fusion, so a poisoned fused result cannot hide its poisoner.
const (
	// OutlierThreshold is the outlier score above which a fusion warns
	// (Output.Warning): 3.5, Iglewicz and Hoaglin's cut-off for the modified
	// z-score (the deviation from the median in units of 1.4826·MAD, which is
	// one standard deviation for Gaussian data).
	OutlierThreshold = 3.5
	// OutlierShapeFloor is the smallest spread, in RMS units of standardized
	// rewards, that the shape z-score divides by: clients that agree almost
	// exactly (MAD ≈ 0) do not turn a small difference of direction into an
	// alarm. Two standardized rewards at RMS distance d have correlation
	// 1 − d²/2, so with the floor a client is flagged for its shape alone
	// only beyond d = median + 0.35, a correlation with the median client
	// below about 0.94 when the others agree exactly; a reversed reward
	// (d ≈ 2) scores about 20.
	OutlierShapeFloor = 0.1
	// OutlierScaleFloor is the smallest spread of the log reward scales that
	// the scale z-score divides by: ln 2 / 4, so a client needs a scale
	// 2^(3.5/4·1.4826) ≈ 2.5 times the median's before it is flagged when
	// the honest scales agree exactly.
	OutlierScaleFloor = math.Ln2 / 4
)

// OutlierScores returns each client's outlier score from its reward on the
// probe (rs[i], one value per probe point): the larger of two robust
// z-scores, each (v_i − median v)/(1.4826·MAD v) over the K clients, with the
// MAD floored (OutlierShapeFloor, OutlierScaleFloor) and unweighted, so a
// client's declared demonstration count cannot buy it a smaller score:
//
//   - shape: v_i is the RMS distance between client i's standardized reward
//     u_i = (r_i − mean r_i)/std r_i and the point-wise median of the u_j
//     (a constant reward has u_i = 0). A reversed reward of honest scale has
//     u_i ≈ −u_median and stands out here, as does a spike or a random
//     direction.
//   - scale: v_i = ln std r_i − median_j ln std r_j, in units of 1.4826
//     times the median of the |v_j| (the MAD of the log scales). It is
//     one-sided: a reward much larger than the median client's stands out
//     (a θ scaled towards the norm bound), a much smaller one does not, as
//     a small reward pulls no mean and its shape, which is what a scale-free
//     method weighs, has its own score; a constant reward gets no scale
//     score.
//
// With fewer than 3 clients there is no median client to compare with and
// every score is 0.
func OutlierScores(rs [][]float64) []float64 {
	k := len(rs)
	out := make([]float64, k)
	if k < 3 {
		return out
	}
	n := len(rs[0])
	us := make([][]float64, k)
	logScale := make([]float64, 0, k)
	scaleOf := make([]float64, k)
	for i, r := range rs {
		mean := 0.0
		for _, v := range r {
			mean += v
		}
		mean /= float64(n)
		ss := 0.0
		for _, v := range r {
			ss += (v - mean) * (v - mean)
		}
		sd := math.Sqrt(ss / float64(n))
		u := make([]float64, n)
		scaleOf[i] = math.NaN()
		if sd > 0 && !math.IsInf(sd, 0) {
			for x, v := range r {
				u[x] = (v - mean) / sd
			}
			scaleOf[i] = math.Log(sd)
			logScale = append(logScale, scaleOf[i])
		}
		us[i] = u
	}
	med := coordinatewise(us, plainMedian)
	shape := make([]float64, k)
	for i, u := range us {
		s := 0.0
		for x, v := range u {
			s += (v - med[x]) * (v - med[x])
		}
		shape[i] = math.Sqrt(s / float64(n))
	}
	zShape := robustZ(shape, shape, OutlierShapeFloor)
	var zScale []float64
	if len(logScale) >= 3 {
		m := plainMedian(logScale)
		dev := make([]float64, k)
		devOK := make([]float64, 0, len(logScale))
		for i, l := range scaleOf {
			if !math.IsNaN(l) {
				dev[i] = l - m
				devOK = append(devOK, math.Abs(dev[i]))
			}
		}
		// The deviations are centred at 0: the MAD is the median of their
		// absolute values, and the z-score a deviation in units of 1.4826·MAD.
		zScale = make([]float64, k)
		spread := max(1.4826*plainMedian(devOK), OutlierScaleFloor)
		for i, d := range dev {
			zScale[i] = d / spread
		}
	}
	for i := range out {
		out[i] = zShape[i]
		if zScale != nil {
			out[i] = max(out[i], zScale[i])
		}
	}
	return out
}

// robustZ returns (v_i − median ref)/max(1.4826·MAD ref, floor) for every v_i.
func robustZ(v, ref []float64, floor float64) []float64 {
	m := plainMedian(ref)
	dev := make([]float64, len(ref))
	for i, x := range ref {
		dev[i] = math.Abs(x - m)
	}
	spread := max(1.4826*plainMedian(dev), floor)
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = (x - m) / spread
	}
	return out
}

// plainMedian returns the unweighted median of v (the mean of the two middle
// values for an even count); v is not modified.
func plainMedian(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	k := len(s)
	if k%2 == 1 {
		return s[k/2]
	}
	return s[k/2-1] + (s[k/2]-s[k/2-1])/2
}

// Flagged returns the indices of the scores above OutlierThreshold, in order.
func Flagged(scores []float64) []int {
	var out []int
	for i, s := range scores {
		if s > OutlierThreshold {
			out = append(out, i)
		}
	}
	return out
}

// OutlierWarning returns the warning a fusion carries when some client's
// outlier score exceeds OutlierThreshold, naming each such client by
// name(i) with its score, or "" when none does.
func OutlierWarning(scores []float64, name func(i int) string) string {
	idx := Flagged(scores)
	if len(idx) == 0 {
		return ""
	}
	parts := make([]string, len(idx))
	for j, i := range idx {
		parts[j] = fmt.Sprintf("%s (%.3g)", name(i), scores[i])
	}
	return fmt.Sprintf("outlier score above %g for %s (robust z-score of the client's reward shape or scale against the median client): "+
		"the fused result may be dominated by %s; check %s before using it",
		OutlierThreshold, strings.Join(parts, ", "), plural(len(idx), "this client", "these clients"), plural(len(idx), "its submission", "their submissions"))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
