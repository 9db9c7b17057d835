package classic

import (
	"encoding/json"
	"math"
	"os"
	"testing"

	"github.com/fedirl/fedirl/pkg/approx"
)

// goldenFile holds trajectories produced by testdata/gymnasium_reference.py, a
// numpy transcription of Gymnasium's step functions.
type goldenFile struct {
	Numpy string       `json:"numpy"`
	Cases []goldenCase `json:"cases"`
}

type goldenCase struct {
	Name    string             `json:"name"`
	Env     string             `json:"env"`
	Params  map[string]float64 `json:"params"`
	State0  []float64          `json:"state0"`
	Actions []float64          `json:"actions"`
	// Reproducible is the number of steps over which Gymnasium agrees with
	// itself to 1e-9 when numpy's SIMD sin/cos replace the C library's.
	Reproducible int `json:"reproducible_steps"`
	Steps        []struct {
		Obs        []float64 `json:"obs"`
		Reward     float64   `json:"reward"`
		Terminated bool      `json:"terminated"`
		Truncated  bool      `json:"truncated"`
		State      []float64 `json:"state"`
	} `json:"steps"`
}

func loadGolden(t *testing.T) goldenFile {
	t.Helper()
	b, err := os.ReadFile("testdata/gymnasium_golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var g goldenFile
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatalf("parsing golden file: %v", err)
	}
	if len(g.Cases) == 0 {
		t.Fatal("golden file has no cases")
	}
	return g
}

// openLoopSteps is the horizon over which open-loop replays must agree with
// the goldens to 1e-9: the 200 steps (or the episode's end).
const openLoopSteps = 200

// TestGoldenTrajectories replays each golden action sequence open loop from the
// golden initial state and compares every step's state, observation, reward
// and flags with the reference to 1e-9 per coordinate, over the first 200
// steps or to termination. Beyond that horizon (and beyond the steps over
// which Gymnasium reproduces itself, see reproducible_steps), chaotic cases
// amplify last-bit differences of sin/cos; TestGoldenSingleSteps covers every
// step there. Every case must also be one over which Gymnasium reproduces
// itself to 1e-9 for the whole horizon, so the comparison is well defined.
func TestGoldenTrajectories(t *testing.T) {
	const tol = 1e-9
	g := loadGolden(t)
	for _, c := range g.Cases {
		t.Run(c.Name, func(t *testing.T) {
			e, err := MakeWithParams(c.Env, c.Params)
			if err != nil {
				t.Fatal(err)
			}
			if err := e.SetState(c.State0); err != nil {
				t.Fatal(err)
			}
			if len(c.Actions) != len(c.Steps) {
				t.Fatalf("golden case has %d actions for %d steps", len(c.Actions), len(c.Steps))
			}
			horizon := min(openLoopSteps, len(c.Steps))
			if c.Reproducible < horizon {
				t.Fatalf("golden case reproduces itself over %d steps only, fewer than the horizon %d", c.Reproducible, horizon)
			}
			var maxDiff float64
			diverged := 0
			state := make([]float64, e.StateDim())
			for k, want := range c.Steps {
				obs, r, term, trunc := e.Step([]float64{c.Actions[k]})
				state = e.State(state)
				d := approx.MaxAbsDiff(state, want.State)
				if k >= horizon {
					if diverged == 0 && d > tol {
						diverged = k + 1
					}
					if term || trunc {
						break
					}
					continue
				}
				maxDiff = math.Max(maxDiff, d)
				if err := approx.SlicesErr(state, want.State, tol, 0); err != nil {
					t.Fatalf("step %d state: %v", k+1, err)
				}
				if err := approx.SlicesErr(obs, want.Obs, tol, 0); err != nil {
					t.Fatalf("step %d obs: %v", k+1, err)
				}
				if !approx.Close(r, want.Reward, tol, 0) {
					t.Fatalf("step %d reward %v, want %v", k+1, r, want.Reward)
				}
				if term != want.Terminated || trunc != want.Truncated {
					t.Fatalf("step %d terminated/truncated %v/%v, want %v/%v", k+1, term, trunc, want.Terminated, want.Truncated)
				}
			}
			t.Logf("%d of %d steps open loop, max |state diff| %.3g; first step beyond 1e-9 after the horizon: %d (0 = none)",
				horizon, len(c.Steps), maxDiff, diverged)
		})
	}
}

// TestGoldenSingleSteps checks every golden step in isolation: from the golden
// state before step k, one step with the golden action must give the golden
// state, observation, reward and flags after step k to 1e-12 (relative
// 1e-12 for large values). This covers whole episodes, including the parts
// of chaotic trajectories that open-loop replays cannot follow.
func TestGoldenSingleSteps(t *testing.T) {
	const abs, rel = 1e-12, 1e-12
	g := loadGolden(t)
	for _, c := range g.Cases {
		t.Run(c.Name, func(t *testing.T) {
			e, err := MakeWithParams(c.Env, c.Params)
			if err != nil {
				t.Fatal(err)
			}
			prev := c.State0
			state := make([]float64, e.StateDim())
			for k, want := range c.Steps {
				if err := e.SetState(prev); err != nil {
					t.Fatal(err)
				}
				obs, r, term, trunc := e.Step([]float64{c.Actions[k]})
				state = e.State(state)
				if err := approx.SlicesErr(state, want.State, abs, rel); err != nil {
					t.Fatalf("step %d state: %v", k+1, err)
				}
				if err := approx.SlicesErr(obs, want.Obs, abs, rel); err != nil {
					t.Fatalf("step %d obs: %v", k+1, err)
				}
				if !approx.Close(r, want.Reward, abs, rel) {
					t.Fatalf("step %d reward %v, want %v", k+1, r, want.Reward)
				}
				// SetState restarts the TimeLimit count, so truncation is
				// checked by TestGoldenTrajectories; termination is per step.
				if term != want.Terminated {
					t.Fatalf("step %d terminated %v, want %v", k+1, term, want.Terminated)
				}
				_ = trunc
				prev = want.State
			}
		})
	}
}
