package fusion_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/fedirl/fedirl/pkg/approx"
	"github.com/fedirl/fedirl/pkg/envs/gridworld"
	"github.com/fedirl/fedirl/pkg/features"
	"github.com/fedirl/fedirl/pkg/fusion"
	"github.com/fedirl/fedirl/pkg/tasks"
)

// bruteOutlier is the outlier score written out from its definition with
// sort.Float64s medians: max(shape z, one-sided scale z).
func bruteOutlier(rs [][]float64) []float64 {
	k, n := len(rs), len(rs[0])
	med := func(v []float64) float64 {
		s := append([]float64(nil), v...)
		sort.Float64s(s)
		if len(s)%2 == 1 {
			return s[len(s)/2]
		}
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	us := make([][]float64, k)
	var logs []float64
	logOf := make([]float64, k)
	for i, r := range rs {
		m := 0.0
		for _, v := range r {
			m += v
		}
		m /= float64(n)
		ss := 0.0
		for _, v := range r {
			ss += (v - m) * (v - m)
		}
		sd := math.Sqrt(ss / float64(n))
		us[i] = make([]float64, n)
		logOf[i] = math.NaN()
		if sd > 0 {
			for x, v := range r {
				us[i][x] = (v - m) / sd
			}
			logOf[i] = math.Log(sd)
			logs = append(logs, logOf[i])
		}
	}
	shape := make([]float64, k)
	for x := range n {
		col := make([]float64, k)
		for i := range us {
			col[i] = us[i][x]
		}
		mx := med(col)
		for i := range us {
			shape[i] += (us[i][x] - mx) * (us[i][x] - mx) / float64(n)
		}
	}
	for i := range shape {
		shape[i] = math.Sqrt(shape[i])
	}
	ms := med(shape)
	dev := make([]float64, k)
	for i, s := range shape {
		dev[i] = math.Abs(s - ms)
	}
	sShape := math.Max(1.4826*med(dev), fusion.OutlierShapeFloor)
	out := make([]float64, k)
	for i, s := range shape {
		out[i] = (s - ms) / sShape
	}
	if len(logs) >= 3 {
		ml := med(logs)
		var ad []float64
		for _, l := range logs {
			ad = append(ad, math.Abs(l-ml))
		}
		sScale := math.Max(1.4826*med(ad), fusion.OutlierScaleFloor)
		for i, l := range logOf {
			if !math.IsNaN(l) {
				out[i] = math.Max(out[i], (l-ml)/sScale)
			}
		}
	}
	return out
}

// TestOutlierScoresDefinition compares OutlierScores with the definition
// written out on random rewards (odd and even K, a constant reward), and
// checks its invariance: a common positive scale of every reward and a
// per-client constant change no score.
func TestOutlierScoresDefinition(t *testing.T) {
	rng := rand.New(rand.NewPCG(53, 4))
	for _, k := range []int{3, 4, 7, 12} {
		rs := make([][]float64, k)
		for i := range rs {
			rs[i] = make([]float64, 30)
			s := math.Exp(rng.NormFloat64())
			for x := range rs[i] {
				rs[i][x] = s * (math.Sin(float64(x)/5) + 0.3*rng.NormFloat64())
			}
		}
		if k == 7 {
			for x := range rs[2] {
				rs[2][x] = 4 // a constant reward: shape 0-vector, no scale score
			}
		}
		got := fusion.OutlierScores(rs)
		approx.Slices(t, "outlier scores vs their definition", got, bruteOutlier(rs), 1e-12, 1e-12)
		moved := make([][]float64, k)
		for i, r := range rs {
			moved[i] = make([]float64, len(r))
			c := 10 * rng.NormFloat64()
			for x, v := range r {
				moved[i][x] = 37*v + c
			}
		}
		approx.Slices(t, "outlier scores of 37·r_i + c_i", fusion.OutlierScores(moved), got, 1e-9, 1e-9)
	}
	if s := fusion.OutlierScores([][]float64{{1, 2}, {-5, 9}}); !slices.Equal(s, []float64{0, 0}) {
		t.Errorf("two clients: scores %v, want 0 (no median client)", s)
	}
}

// TestOutlierScoresFlagTheStealthyAttacker: on the grid world's 10×10 probe
// with the ten honest θ of the turn-5 measurements (fedirl gridworld export
// --size 10 --clients 10 --client i --seed 1; fedirl irl --iters 50 --l2
// 1e-3), the attacks of the notes are flagged (score above
// OutlierThreshold) while no honest client is: a reversed θ of honest scale
// (−hmean, −2·hmean: the one that moved reward-median with per-client σ and
// scored below the honest maximum as an RMS distance), the sign flip at
// the norm bound, a scaled θ and a reward spike, with 1 and 3 attackers.
func TestOutlierScoresFlagTheStealthyAttacker(t *testing.T) {
	p := probeGrid(t, 10, 1)
	honest := turn5Honest()
	hmean := make([]float64, 2)
	for _, th := range honest {
		hmean[0] += th[0] / float64(len(honest))
		hmean[1] += th[1] / float64(len(honest))
	}
	n, _ := p.Phi.Dims()
	spike := make([]float64, n)
	spike[17] = 0.999e9
	scale := func(s float64) []float64 { return []float64{s * hmean[0], s * hmean[1]} }
	for _, c := range []struct {
		name   string
		reward []float64
	}{
		{"reversed θ of honest scale", features.Reward(nil, p.Phi, scale(-1))},
		{"reversed θ of twice honest scale", features.Reward(nil, p.Phi, scale(-2))},
		{"sign flip at the norm bound", features.Reward(nil, p.Phi, scale(-1e6/math.Hypot(hmean[0], hmean[1])))},
		{"honest direction ×1000", features.Reward(nil, p.Phi, scale(1000))},
		{"spike of 1e9 on one probe point", spike},
	} {
		for _, f := range []int{1, 3} {
			var rs [][]float64
			for _, th := range honest {
				rs = append(rs, features.Reward(nil, p.Phi, th))
			}
			for range f {
				rs = append(rs, c.reward)
			}
			s := fusion.OutlierScores(rs)
			want := []int{10, 11, 12}[:f]
			if got := fusion.Flagged(s); !slices.Equal(got, want) {
				t.Errorf("%s, %d attacker(s): flagged %v, want %v (scores %.3g)", c.name, f, got, want, s)
			}
		}
	}
	var rs [][]float64
	for _, th := range honest {
		rs = append(rs, features.Reward(nil, p.Phi, th))
	}
	if got := fusion.Flagged(fusion.OutlierScores(rs)); got != nil {
		t.Errorf("honest clients only: flagged %v", got)
	}
}

// turn5Honest returns the ten honest θ of the turn-5 measurements (inputs,
// made by the commands in TestOutlierScoresFlagTheStealthyAttacker's doc;
// bench/robust/run.sh makes them again).
func turn5Honest() [][]float64 {
	return [][]float64{
		{-0.02161515532641288, 0.02670706747422706}, {-0.032555189767388436, 0.03279818036292931},
		{-0.06164278186978441, 0.034783273683226534}, {-0.11315912205204802, 0.05501264091836369},
		{-0.013436711261998104, 0.012657525246715996}, {-0.006648207509341135, 0.0034908908578988435},
		{-0.06492601503328745, 0.023075456123055484}, {-0.013663517412845905, 0.006676246271187404},
		{-0.058010648489033284, 0.03434493724858192}, {-0.07755443468459222, 0.02975828544710664},
	}
}

// TestTrimmedMeanDeclaredTolerance: with byzantine = f the trimmed means trim
// exactly f clients from each tail (the textbook sort-and-drop on every
// coordinate), so f attackers at the norm bound leave θ̄ inside the honest
// range; an explicit trim_fraction that trims less is refused naming both
// keys, and so is an f whose clients weigh half the total.
func TestTrimmedMeanDeclaredTolerance(t *testing.T) {
	rng := rand.New(rand.NewPCG(53, 5))
	for _, c := range []struct{ honest, f int }{{10, 1}, {10, 3}, {8, 5}} {
		var thetas [][]float64
		for range c.honest {
			thetas = append(thetas, []float64{-1 + 0.1*rng.NormFloat64(), 0.5 + 0.1*rng.NormFloat64()})
		}
		for range c.f { // all on one side: the strongest attack on a trim
			thetas = append(thetas, []float64{1e6, -1e6})
		}
		k := len(thetas)
		out, err := fusion.Fuse(fusion.Probe{}, thetas, nil, fusion.Options{Method: fusion.MethodTrimmedMean, Byzantine: ptr(c.f)})
		if err != nil {
			t.Fatal(err)
		}
		for j := range 2 {
			col := make([]float64, k)
			for i, th := range thetas {
				col[i] = th[j]
			}
			sort.Float64s(col)
			want := 0.0
			for _, v := range col[c.f : k-c.f] {
				want += v / float64(k-2*c.f)
			}
			approx.Equal(t, "trimmed mean with byzantine = f vs sort and drop f", out.Theta[j], want, 1e-12, 1e-12)
			if math.Abs(out.Theta[j]) > 2 {
				t.Errorf("K = %d, f = %d: θ̄[%d] = %v left the honest range", k, c.f, j, out.Theta[j])
			}
		}
		// The default β = 0.2 trims ⌊0.2K⌋ < 3 clients of 13: the attack gets through.
		if c.f == 3 {
			def, err := fusion.Fuse(fusion.Probe{}, thetas, nil, fusion.Options{Method: fusion.MethodTrimmedMean})
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(def.Theta[0]) < 1e3 {
				t.Errorf("default β with 3 attackers of 13: θ̄ = %v, want the attack visible (documented tolerance 2 of 13)", def.Theta)
			}
		}
	}
	thetas := randomThetas(rng, 13, 2)
	for _, c := range []struct {
		opt  fusion.Options
		want string
	}{
		{fusion.Options{Method: fusion.MethodTrimmedMean, Byzantine: ptr(3), TrimFraction: ptr(0.2)}, "trim_fraction = 0.2"},
		{fusion.Options{Method: fusion.MethodTrimmedMean, Byzantine: ptr(7)}, "at least 1/2"},
		{fusion.Options{Method: fusion.MethodRewardTrimmedMean, Byzantine: ptr(3), TrimFraction: ptr(0.1)}, "byzantine = 3"},
	} {
		p := fusion.Probe{}
		if c.opt.Method == fusion.MethodRewardTrimmedMean {
			p = probe5(t)
		}
		_, err := fusion.Fuse(p, thetas, nil, c.opt)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want it to mention %q", c.opt, err, c.want)
		}
	}
	// trim_fraction large enough for byzantine: accepted and used as given.
	a, err := fusion.Fuse(fusion.Probe{}, thetas, nil, fusion.Options{Method: fusion.MethodTrimmedMean, Byzantine: ptr(2), TrimFraction: ptr(0.3)})
	if err != nil {
		t.Fatal(err)
	}
	b, err := fusion.Fuse(fusion.Probe{}, thetas, nil, fusion.Options{Method: fusion.MethodTrimmedMean, TrimFraction: ptr(0.3)})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.Theta, b.Theta) {
		t.Errorf("byzantine 2 with trim_fraction 0.3: %v, trim_fraction 0.3 alone %v", a.Theta, b.Theta)
	}
}

// probeGrid returns the grid-world family's probe of an N×N grid at seed.
func probeGrid(t *testing.T, size int, seed uint64) fusion.Probe {
	t.Helper()
	spec, err := gridworld.DefaultFamily(size).Probe(seed)
	if err != nil {
		t.Fatal(err)
	}
	p, err := tasks.GridProbe(spec)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
