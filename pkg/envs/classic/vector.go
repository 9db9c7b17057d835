package classic

import (
	"fmt"
	"sync"

	"github.com/fedirl/fedirl/pkg/envs"
)

// Vector steps many environment copies in lock step with automatic reset, for
// on-policy learners such as PPO. All buffers are allocated once by NewVector;
// Reset and Step allocate nothing (given environments whose Reset and Step
// allocate nothing, as this package's do).
//
// Auto-reset is "same step", as in Stable-Baselines3: when copy k terminates
// or is truncated, its final observation is copied to row k of FinalObs, its
// episode return and length to FinalReturn[k] and FinalLength[k], and the
// copy is reset at once, so row k of Obs already holds the first observation
// of the next episode. The episode seeds are derived deterministically from
// the seed given to Reset, the copy index and the episode count, so a run is
// reproducible whatever the number of workers.
type Vector struct {
	envs           []envs.Env
	obsDim, actDim int
	seed           uint64
	episodes       []uint64

	// Obs holds the current observation of copy k in Obs[k*ObsDim:(k+1)*ObsDim].
	Obs []float64
	// FinalObs holds, for copies that ended on the last Step, their final observation (same layout as Obs).
	FinalObs []float64
	// Rewards holds the reward of each copy's last step.
	Rewards []float64
	// Terminated and Truncated hold each copy's flags from the last step.
	Terminated, Truncated []bool
	// EpisodeReturn and EpisodeLength accumulate the running episode of each copy.
	EpisodeReturn []float64
	EpisodeLength []int
	// FinalReturn and FinalLength hold the return and length of the episode
	// that ended on the last Step, for copies whose Terminated or Truncated is set.
	FinalReturn []float64
	FinalLength []int

	workers int
	jobs    []chan vecJob
	wg      sync.WaitGroup
	closed  bool
}

type vecJob struct {
	lo, hi  int
	actions []float64
	reset   bool
}

// NewVector returns a serial Vector over es, which must be non-empty and share
// observation and action dimensions (a programmer error otherwise).
func NewVector(es []envs.Env) *Vector {
	return NewVectorWorkers(es, 1)
}

// NewVectorWorkers is NewVector with workers goroutines each stepping a
// contiguous block of copies (workers <= 1 means serial). Call Close when done
// with a Vector that has more than one worker, to stop its goroutines.
func NewVectorWorkers(es []envs.Env, workers int) *Vector {
	if len(es) == 0 {
		panic("classic: NewVector needs at least one environment")
	}
	od, ad := es[0].ObservationSpace().Dim(), es[0].ActionSpace().Dim()
	for k, e := range es {
		if e.ObservationSpace().Dim() != od || e.ActionSpace().Dim() != ad {
			panic(fmt.Sprintf("classic: NewVector: env %d has observation/action dims %d/%d, env 0 has %d/%d",
				k, e.ObservationSpace().Dim(), e.ActionSpace().Dim(), od, ad))
		}
	}
	n := len(es)
	if workers > n {
		workers = n
	}
	if workers < 1 {
		workers = 1
	}
	v := &Vector{
		envs: es, obsDim: od, actDim: ad,
		episodes:      make([]uint64, n),
		Obs:           make([]float64, n*od),
		FinalObs:      make([]float64, n*od),
		Rewards:       make([]float64, n),
		Terminated:    make([]bool, n),
		Truncated:     make([]bool, n),
		EpisodeReturn: make([]float64, n),
		EpisodeLength: make([]int, n),
		FinalReturn:   make([]float64, n),
		FinalLength:   make([]int, n),
		workers:       workers,
	}
	if workers > 1 {
		v.jobs = make([]chan vecJob, workers)
		for w := range v.jobs {
			ch := make(chan vecJob)
			v.jobs[w] = ch
			go func() {
				for j := range ch {
					v.run(j)
					v.wg.Done()
				}
			}()
		}
	}
	return v
}

// Close stops the worker goroutines; the Vector must not be used afterwards.
func (v *Vector) Close() {
	if v.closed {
		return
	}
	v.closed = true
	for _, ch := range v.jobs {
		close(ch)
	}
}

// Len returns the number of copies.
func (v *Vector) Len() int { return len(v.envs) }

// ObsDim returns the length of one observation.
func (v *Vector) ObsDim() int { return v.obsDim }

// ActDim returns the length of one action.
func (v *Vector) ActDim() int { return v.actDim }

// Env returns copy k.
func (v *Vector) Env(k int) envs.Env { return v.envs[k] }

// Reset resets every copy with episode seeds derived from seed and returns Obs.
func (v *Vector) Reset(seed uint64) []float64 {
	v.seed = seed
	clear(v.episodes)
	clear(v.EpisodeReturn)
	clear(v.EpisodeLength)
	clear(v.Terminated)
	clear(v.Truncated)
	clear(v.Rewards)
	v.dispatch(nil, true)
	return v.Obs
}

// Step applies actions (copy k's action in actions[k*ActDim:(k+1)*ActDim]) to
// every copy, auto-resetting those that end, and returns Obs, Rewards,
// Terminated and Truncated. Invalid actions panic as the copies' Step does.
func (v *Vector) Step(actions []float64) (obs, rewards []float64, terminated, truncated []bool) {
	if len(actions) != len(v.envs)*v.actDim {
		panic(fmt.Sprintf("classic: Vector.Step: got %d action values, want %d", len(actions), len(v.envs)*v.actDim))
	}
	v.dispatch(actions, false)
	return v.Obs, v.Rewards, v.Terminated, v.Truncated
}

func (v *Vector) dispatch(actions []float64, reset bool) {
	n := len(v.envs)
	if v.workers <= 1 {
		v.run(vecJob{lo: 0, hi: n, actions: actions, reset: reset})
		return
	}
	v.wg.Add(v.workers)
	for w, ch := range v.jobs {
		ch <- vecJob{lo: w * n / v.workers, hi: (w + 1) * n / v.workers, actions: actions, reset: reset}
	}
	v.wg.Wait()
}

func (v *Vector) run(j vecJob) {
	od, ad := v.obsDim, v.actDim
	for k := j.lo; k < j.hi; k++ {
		e := v.envs[k]
		row := v.Obs[k*od : (k+1)*od]
		if j.reset {
			copy(row, e.Reset(episodeSeed(v.seed, k, 0)))
			continue
		}
		obs, r, term, trunc := e.Step(j.actions[k*ad : (k+1)*ad])
		v.Rewards[k], v.Terminated[k], v.Truncated[k] = r, term, trunc
		v.EpisodeReturn[k] += r
		v.EpisodeLength[k]++
		if term || trunc {
			copy(v.FinalObs[k*od:(k+1)*od], obs)
			v.FinalReturn[k], v.FinalLength[k] = v.EpisodeReturn[k], v.EpisodeLength[k]
			v.EpisodeReturn[k], v.EpisodeLength[k] = 0, 0
			v.episodes[k]++
			obs = e.Reset(episodeSeed(v.seed, k, v.episodes[k]))
		}
		copy(row, obs)
	}
}

// episodeSeed derives the seed of copy k's episode ep from the Vector seed
// with SplitMix64 mixing.
func episodeSeed(seed uint64, k int, ep uint64) uint64 {
	z := seed ^ splitmix(uint64(k)+0x9e3779b97f4a7c15) ^ splitmix(ep^0xd1b54a32d192ed03)
	return splitmix(z)
}

func splitmix(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
