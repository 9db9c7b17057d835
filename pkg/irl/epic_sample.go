package irl

// Sample-based EPIC follows evaluating-rewards' sample canonicalization
// (sample_canon_shaping with n_mean_samples, then the Pearson distance),
// written for rewards given as functions of real vectors, so that an
// environment without a lattice model still gets an EPIC distance. The
// exact, model-based EPIC (EPIC, EPICTransitions) is its reference where a
// model exists.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// SampleReward is a reward R(s, a, s′) on states and actions given as real
// vectors (an environment's observations and actions, or any encoding of
// them). It must be a pure function of its arguments and must not keep or
// modify them.
type SampleReward func(s, a, next []float64) float64

// Transition is one triple (s, a, s′) at which rewards are evaluated.
type Transition struct {
	State, Action, Next []float64
}

// SampleSet is what SampleEPIC reads: the batch of transitions from the
// coverage distribution D at which the canonicalized rewards are compared,
// and the paired samples (A_j, S′_j), A_j ∼ D_A and S′_j ∼ D_S independent,
// over which the canonicalization's expectations are averaged (N_M =
// len(States) = len(Actions), evaluating-rewards' n_mean_samples).
type SampleSet struct {
	Batch   []Transition
	States  [][]float64
	Actions [][]float64
}

// SampleEPICOptions configures SampleEPIC; the zero value uses γ = 0 and
// DefaultSampleEPICBlocks blocks.
type SampleEPICOptions struct {
	// Gamma is the discount γ ∈ [0, 1] of the canonicalization.
	Gamma float64
	// Blocks is the number K ≥ 2 of groups of the delete-a-group jackknife
	// that gives StdErr; 0 means DefaultSampleEPICBlocks. It is capped at
	// half the batch size and at N_M; where that leaves fewer than 2
	// groups, StdErr is +Inf.
	Blocks int
}

// DefaultSampleEPICBlocks is the number of jackknife groups when
// SampleEPICOptions.Blocks is 0.
const DefaultSampleEPICBlocks = 20

// SampleEPICResult is the outcome of SampleEPIC.
type SampleEPICResult struct {
	// Distance is the estimated EPIC pseudometric sqrt((1−ρ)/2) ∈ [0, 1].
	Distance float64
	// Pearson is the estimated ρ of the canonicalized rewards over the batch.
	Pearson float64
	// StdErr is the jackknife standard error of Distance, covering both the
	// batch and the canonicalization samples (see SampleEPIC); +Inf where
	// the samples are too few for a jackknife or a replicate is constant.
	StdErr float64
	// Batch and MeanSamples are the sample sizes, Blocks the jackknife's K
	// (0 where StdErr is +Inf for too few samples).
	Batch, MeanSamples, Blocks int
}

// ErrNonFiniteReward is wrapped by SampleEPIC's error when a reward returns
// NaN or ±Inf at a point it is evaluated at.
var ErrNonFiniteReward = errors.New("non-finite reward")

// SampleEPIC estimates the EPIC distance between the rewards ra and rb from
// samples (evaluating-rewards' sample canonicalization). With the
// canonicalization samples (A_j, S′_j) of x (SampleSet), each reward is
// canonicalized at every batch transition (s, a, s′) as
//
//	Ĉ(R)(s,a,s′) = R(s,a,s′) + γψ̂(s′) − ψ̂(s),   ψ̂(x) = (1/N_M) Σ_j R(x, A_j, S′_j),
//
// the sample version of C(R) = R + E[γR(s′,A,S′) − R(s,A,S′) − γR(S,A,S′)]
// (see EPIC). The last term, γE[R(S,A,S′)], is the same constant on every
// transition, and the Pearson correlation ignores constants, so it is not
// estimated. ρ is the Pearson correlation of Ĉ(R_A) and Ĉ(R_B) over the
// batch (equal weights), and the distance sqrt((1−ρ)/2) is evaluated, as in
// EPIC, as half the RMS difference of the standardized canonical rewards.
//
// Exactness. Potential shaping R + γΦ(s′) − Φ(s) changes ψ̂(x) by
// γΦ̄ − Φ(x) (Φ̄ the mean of Φ over the S′_j) and hence Ĉ by the constant
// −γ(1−γ)Φ̄ on every transition, for any Φ: with the samples shared by
// both rewards, shaping leaves the estimate at distance 0 up to rounding,
// whatever the sample sizes. So does a positive scale (Ĉ scales with R),
// and D(R, −R) = 1 likewise (Ĉ is linear in R).
//
// Sampling error. StdErr is the delete-a-group jackknife over K groups
// (SampleEPICOptions.Blocks): replicate k leaves out the k-th contiguous
// block of the batch and the k-th block of the canonicalization samples
// together, so both sources of error are covered (their cross terms vanish
// in expectation as the two sample sets are independent). Contiguous
// blocks also give a batch of consecutive steps of trajectories the
// batch-means treatment of their serial correlation. The estimate is
// biased by O(1/N_M + 1/len(Batch)) (ψ̂'s noise enters both canonical
// rewards and ρ is a ratio), small beside StdErr at the sizes the
// jackknife is meant for (TestSampleEPICConvergesToExact measures it).
//
// SampleEPIC is deterministic: it draws nothing and evaluates the rewards
// in a fixed order, once per batch transition and N_M times per distinct
// state vector among the batch's s and s′ (at most 1 + 2N_M times per
// transition; far fewer on a lattice). A batch of fewer than 2
// transitions, fewer than 2 canonicalization samples, vectors of
// inconsistent lengths, a γ outside [0, 1], or a non-finite reward value
// (wrapping ErrNonFiniteReward) is an error; so is a reward whose Ĉ is
// constant over the batch (wrapping ErrConstantReward).
func SampleEPIC(ra, rb SampleReward, x SampleSet, o SampleEPICOptions) (SampleEPICResult, error) {
	if ra == nil || rb == nil {
		return SampleEPICResult{}, fmt.Errorf("irl: SampleEPIC: nil reward function")
	}
	if !(o.Gamma >= 0 && o.Gamma <= 1) {
		return SampleEPICResult{}, fmt.Errorf("irl: SampleEPIC: gamma = %v, want a number in [0, 1]", o.Gamma)
	}
	if err := x.check(); err != nil {
		return SampleEPICResult{}, err
	}
	B, N := len(x.Batch), len(x.States)
	K := o.Blocks
	if K == 0 {
		K = DefaultSampleEPICBlocks
	}
	if K < 0 {
		return SampleEPICResult{}, fmt.Errorf("irl: SampleEPIC: %d jackknife blocks, want ≥ 0", o.Blocks)
	}
	if K == 1 {
		return SampleEPICResult{}, fmt.Errorf("irl: SampleEPIC: 1 jackknife block, want at least 2 (or 0 for the default)")
	}
	// Every replicate keeps at least half of the batch and one mean sample.
	K = min(K, B/2, N)
	if K < 2 {
		K = 1 // too few samples for a jackknife: the estimate alone, StdErr +Inf
	}

	// Per reward: the raw value at each batch transition and, per jackknife
	// block of the canonicalization samples, the block sums of R(s, A_j, S′_j)
	// and R(s′, A_j, S′_j).
	var ev [2]sampleEval
	for j, r := range [2]SampleReward{ra, rb} {
		var err error
		if ev[j], err = evalSample(r, x, K); err != nil {
			return SampleEPICResult{}, fmt.Errorf("irl: SampleEPIC: reward %s: %w", [2]string{"A", "B"}[j], err)
		}
	}

	// Full estimate.
	nb := blockSizes(N, K)
	bb := blockSizes(B, K)
	canon := [2][]float64{make([]float64, B), make([]float64, B)}
	for j := range ev {
		ev[j].canonical(canon[j], o.Gamma, nb, -1)
	}
	scale := [2]float64{ev[0].scale, ev[1].scale}
	res, err := pearsonDistance(canon, scale, -1, bb)
	if err != nil {
		return SampleEPICResult{}, err
	}
	out := SampleEPICResult{Distance: res.Distance, Pearson: res.Pearson, Batch: B, MeanSamples: N, Blocks: K}
	if K < 2 {
		out.Blocks, out.StdErr = 0, math.Inf(1)
		return out, nil
	}

	// Jackknife replicates: block k of the batch and of the mean samples left out.
	reps := make([]float64, K)
	for k := range K {
		for j := range ev {
			ev[j].canonical(canon[j], o.Gamma, nb, k)
		}
		r, err := pearsonDistance(canon, scale, k, bb)
		if err != nil {
			// A replicate that is constant is an estimate of no precision.
			out.StdErr = math.Inf(1)
			return out, nil
		}
		reps[k] = r.Distance
	}
	mean := 0.0
	for _, v := range reps {
		mean += v
	}
	mean /= float64(K)
	ss := 0.0
	for _, v := range reps {
		ss += (v - mean) * (v - mean)
	}
	out.StdErr = math.Sqrt(float64(K-1) / float64(K) * ss)
	return out, nil
}

// check validates the sizes and vector lengths of x.
func (x SampleSet) check() error {
	if len(x.Batch) < 2 {
		return fmt.Errorf("irl: SampleEPIC: the batch has %d transitions, want at least 2", len(x.Batch))
	}
	if len(x.States) != len(x.Actions) {
		return fmt.Errorf("irl: SampleEPIC: %d canonicalization states but %d actions (they are paired)", len(x.States), len(x.Actions))
	}
	if len(x.States) < 2 {
		return fmt.Errorf("irl: SampleEPIC: %d canonicalization samples, want at least 2", len(x.States))
	}
	ds, da := len(x.Batch[0].State), len(x.Batch[0].Action)
	for i, t := range x.Batch {
		if len(t.State) != ds || len(t.Next) != ds {
			return fmt.Errorf("irl: SampleEPIC: batch transition %d has state length %d and next-state length %d, want %d (batch transition 0)", i, len(t.State), len(t.Next), ds)
		}
		if len(t.Action) != da {
			return fmt.Errorf("irl: SampleEPIC: batch transition %d has action length %d, want %d (batch transition 0)", i, len(t.Action), da)
		}
		if err := finiteVec(t.State); err != nil {
			return fmt.Errorf("irl: SampleEPIC: batch transition %d state: %w", i, err)
		}
		if err := finiteVec(t.Action); err != nil {
			return fmt.Errorf("irl: SampleEPIC: batch transition %d action: %w", i, err)
		}
		if err := finiteVec(t.Next); err != nil {
			return fmt.Errorf("irl: SampleEPIC: batch transition %d next state: %w", i, err)
		}
	}
	for j := range x.States {
		if len(x.States[j]) != ds {
			return fmt.Errorf("irl: SampleEPIC: canonicalization state %d has length %d, want %d (the batch's)", j, len(x.States[j]), ds)
		}
		if len(x.Actions[j]) != da {
			return fmt.Errorf("irl: SampleEPIC: canonicalization action %d has length %d, want %d (the batch's)", j, len(x.Actions[j]), da)
		}
		if err := finiteVec(x.States[j]); err != nil {
			return fmt.Errorf("irl: SampleEPIC: canonicalization state %d: %w", j, err)
		}
		if err := finiteVec(x.Actions[j]); err != nil {
			return fmt.Errorf("irl: SampleEPIC: canonicalization action %d: %w", j, err)
		}
	}
	return nil
}

// finiteVec returns an error naming the first non-finite entry of v.
func finiteVec(v []float64) error {
	for i, f := range v {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("entry %d = %v is not finite", i, f)
		}
	}
	return nil
}

// sampleEval holds one reward's evaluations: raw[i] = R at batch transition
// i; from[i], to[i] the indices into sums of the states s_i and s′_i, where
// sums[u*K+k] is the sum over block k of the canonicalization samples of
// R(x_u, A_j, S′_j) for the u-th distinct state vector x_u of the batch.
type sampleEval struct {
	raw      []float64
	from, to []int
	sums     []float64
	K        int
	scale    float64 // the largest magnitude evaluated, for the constancy test
}

// evalSample evaluates r everywhere SampleEPIC needs it, with K blocks.
// ψ̂ is computed once per distinct state vector of the batch (compared
// bit for bit), as evaluating-rewards does with np.unique: on a lattice or
// any discrete encoding this divides the cost by the number of repeats.
func evalSample(r SampleReward, x SampleSet, K int) (sampleEval, error) {
	B, N := len(x.Batch), len(x.States)
	e := sampleEval{raw: make([]float64, B), from: make([]int, B), to: make([]int, B), K: K}
	nb := blockSizes(N, K)
	check := func(v float64, where func() string) error {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%w: %v at %s", ErrNonFiniteReward, v, where())
		}
		e.scale = max(e.scale, math.Abs(v))
		return nil
	}
	index := map[string]int{}
	var key []byte
	// psi returns the index of state v's block sums, computing them the first time.
	psi := func(v []float64, what string, i int) (int, error) {
		key = key[:0]
		for _, f := range v {
			key = binary.LittleEndian.AppendUint64(key, math.Float64bits(f))
		}
		if u, ok := index[string(key)]; ok {
			return u, nil
		}
		u := len(index)
		index[string(key)] = u
		j := 0
		for k := range K {
			sum := 0.0
			for end := j + nb[k]; j < end; j++ {
				val := r(v, x.Actions[j], x.States[j])
				if err := check(val, func() string {
					return fmt.Sprintf("(the %s of batch transition %d, canonicalization action %d, state %d)", what, i, j, j)
				}); err != nil {
					return 0, err
				}
				sum += val
			}
			e.sums = append(e.sums, sum)
		}
		return u, nil
	}
	for i, t := range x.Batch {
		v := r(t.State, t.Action, t.Next)
		if err := check(v, func() string { return fmt.Sprintf("batch transition %d", i) }); err != nil {
			return e, err
		}
		e.raw[i] = v
		var err error
		if e.from[i], err = psi(t.State, "state", i); err != nil {
			return e, err
		}
		if e.to[i], err = psi(t.Next, "next state", i); err != nil {
			return e, err
		}
	}
	return e, nil
}

// canonical writes Ĉ(R) at every batch transition into dst, with ψ̂
// averaged over all canonicalization samples except block skip (none when
// skip < 0); nb are the block sizes.
func (e *sampleEval) canonical(dst []float64, gamma float64, nb []int, skip int) {
	n := 0
	for k, c := range nb {
		if k != skip {
			n += c
		}
	}
	inv := 1 / float64(n)
	K := e.K
	U := len(e.sums) / K
	psi := make([]float64, U) // ψ̂ of each distinct state without block skip
	for u := range psi {
		sum := 0.0
		for k := range K {
			if k != skip {
				sum += e.sums[u*K+k]
			}
		}
		psi[u] = sum * inv
	}
	for i := range dst {
		dst[i] = e.raw[i] + gamma*psi[e.to[i]] - psi[e.from[i]]
	}
}

// blockSizes splits n items into K contiguous blocks of sizes differing by
// at most one.
func blockSizes(n, K int) []int {
	s := make([]int, K)
	for k := range s {
		s[k] = n/K + btoi(k < n%K)
	}
	return s
}

// btoi is 1 for true, 0 for false.
func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// pearsonDistance returns ρ and sqrt((1−ρ)/2) of c[0], c[1] over all
// entries except block skip of the batch blocks bb (none when skip < 0),
// the distance as half the RMS difference of the standardized values. A
// c[j] whose spread is below 1e-10 of its magnitude (or of its reward's
// values, scale[j]) is constant: an error wrapping ErrConstantReward.
func pearsonDistance(c [2][]float64, scale [2]float64, skip int, bb []int) (EPICResult, error) {
	skipLo, skipHi := 0, 0
	if skip >= 0 {
		for k := range skip {
			skipLo += bb[k]
		}
		skipHi = skipLo + bb[skip]
	}
	in := func(i int) bool { return i < skipLo || i >= skipHi }
	var mean, sd [2]float64
	n := 0
	for i := range c[0] {
		if in(i) {
			mean[0] += c[0][i]
			mean[1] += c[1][i]
			n++
		}
	}
	mean[0] /= float64(n)
	mean[1] /= float64(n)
	for i := range c[0] {
		if in(i) {
			for j := range c {
				d := c[j][i] - mean[j]
				sd[j] += d * d
				scale[j] = max(scale[j], math.Abs(c[j][i]))
			}
		}
	}
	for j := range sd {
		sd[j] = math.Sqrt(sd[j] / float64(n))
		if !(sd[j] > 1e-10*scale[j]) {
			return EPICResult{}, fmt.Errorf("irl: SampleEPIC: reward %s is %w over the batch", [2]string{"A", "B"}[j], ErrConstantReward)
		}
	}
	var cov, diff2 float64
	for i := range c[0] {
		if in(i) {
			z1 := (c[0][i] - mean[0]) / sd[0]
			z2 := (c[1][i] - mean[1]) / sd[1]
			cov += z1 * z2
			diff2 += (z1 - z2) * (z1 - z2)
		}
	}
	cov /= float64(n)
	diff2 /= float64(n)
	return EPICResult{Distance: min(0.5*math.Sqrt(diff2), 1), Pearson: max(-1, min(cov, 1))}, nil
}
