package lunar

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

// refDir holds trajectories recorded with Gymnasium 1.4.0 and pybox2d
// 2.3.10, with every random draw the environment made (see its README):
// gzip copies of ../shared/reference/lunarlander.
const refDir = "testdata/gymnasium"

type refDraw struct {
	Fn    string          `json:"fn"`
	Args  []float64       `json:"args"`
	Value json.RawMessage `json:"value"`
}

type refStep struct {
	Step       int       `json:"step"`
	Obs        []float64 `json:"obs"`
	Reward     float64   `json:"reward"`
	Terminated bool      `json:"terminated"`
	Truncated  bool      `json:"truncated"`
	Draws      []refDraw `json:"rng_draws"`
}

type refFile struct {
	Env        string         `json:"env"`
	MakeKwargs map[string]any `json:"make_kwargs"`
	Actions    [][]float64    `json:"actions"`
	Steps      []refStep      `json:"steps"`
}

// replayDraws returns Gymnasium's recorded draws in order and checks each
// request against what was recorded.
type replayDraws struct {
	t      testing.TB
	name   string
	values []float64
	args   [][2]float64
	fns    []string
	next   int
	extra  int
}

func newReplay(t testing.TB, name string, f *refFile) *replayDraws {
	r := &replayDraws{t: t, name: name}
	for _, s := range f.Steps {
		for _, d := range s.Draws {
			var vs []float64
			if err := json.Unmarshal(d.Value, &vs); err != nil {
				var v float64
				if err := json.Unmarshal(d.Value, &v); err != nil {
					t.Fatalf("%s: draw value %s: %v", name, d.Value, err)
				}
				vs = []float64{v}
			}
			for _, v := range vs {
				r.values = append(r.values, v)
				r.args = append(r.args, [2]float64{d.Args[0], d.Args[1]})
				r.fns = append(r.fns, d.Fn)
			}
		}
	}
	return r
}

func (r *replayDraws) take(fn string, lo, hi float64) float64 {
	if r.next >= len(r.values) { // ours runs on after Gymnasium's episode ended
		r.extra++
		return lo + (hi-lo)*float64(r.extra%997)/997
	}
	if r.fns[r.next] != fn || r.args[r.next] != [2]float64{lo, hi} {
		r.t.Fatalf("%s: draw %d is %s(%v, %v), Gymnasium drew %s%v", r.name, r.next, fn, lo, hi, r.fns[r.next], r.args[r.next])
	}
	r.next++
	return r.values[r.next-1]
}

func (r *replayDraws) Uniform(lo, hi float64) float64 { return r.take("uniform", lo, hi) }
func (r *replayDraws) Integers(lo, hi int64) int64 {
	return int64(r.take("integers", float64(lo), float64(hi)))
}

func loadRef(t testing.TB, path string) *refFile {
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	zr, err := gzip.NewReader(fh)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var f refFile
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return &f
}

func refParams(t testing.TB, f *refFile) Params {
	p := DefaultParams(f.Env == "LunarLanderContinuous-v3")
	for k, v := range f.MakeKwargs {
		switch k {
		case "enable_wind":
			p.EnableWind = v.(bool)
		case "wind_power":
			p.WindPower = v.(float64)
		case "turbulence_power":
			p.TurbulencePower = v.(float64)
		case "gravity":
			p.Gravity = v.(float64)
		default:
			t.Fatalf("unknown make kwarg %q", k)
		}
	}
	return p
}

func cause(reward float64, terminated, truncated bool) string {
	switch {
	case truncated:
		return "truncated"
	case terminated && reward == 100:
		return "landed (asleep)"
	case terminated && reward == -100:
		return "crashed or left"
	case terminated:
		return fmt.Sprintf("terminated %v", reward)
	}
	return "running"
}

// TestReplayGymnasium replays every reference episode open loop with
// Gymnasium's own random draws and recorded actions, against the issue's
// targets: observations within 1e-5 per coordinate for the first 10 steps
// and within 3e-2 until the first ground contact (a leg, or the body in a
// crash), the same termination cause in every episode and the same
// termination step in at least 80 % of them. (Measured: 3.0e-6, 9.6e-5,
// 34 of 34 and 34 of 34.)
func TestReplayGymnasium(t *testing.T) {
	paths, _ := filepath.Glob(filepath.Join(refDir, "*.json.gz"))
	if len(paths) != 34 {
		t.Fatalf("found %d reference episodes in %s, want 34", len(paths), refDir)
	}
	sort.Strings(paths)
	worst10, worstContact := 0.0, 0.0
	sameStep, sameCause := 0, 0
	for _, path := range paths {
		name := filepath.Base(path)
		f := loadRef(t, path)
		e, err := New(refParams(t, f))
		if err != nil {
			t.Fatal(err)
		}
		rd := newReplay(t, name, f)
		e.SetDraws(rd)
		obs := e.Reset(0)
		contact := false
		compare := func(step int, got, want []float64) {
			d := 0.0
			for i := range want {
				d = math.Max(d, math.Abs(got[i]-want[i]))
			}
			if step <= 10 {
				worst10 = math.Max(worst10, d)
				if d > 1e-5 {
					t.Errorf("%s step %d: observation off by %.3g (> 1e-5): %v vs %v", name, step, d, got, want)
				}
			}
			if !contact {
				worstContact = math.Max(worstContact, d)
				if d > 3e-2 {
					t.Errorf("%s step %d (before the first ground contact): observation off by %.3g (> 3e-2)", name, step, d)
				}
			}
		}
		compare(0, obs, f.Steps[0].Obs)
		var endStep int
		var endCause string
		for t1 := 1; t1 < len(f.Steps); t1++ {
			ref := &f.Steps[t1]
			if ref.Obs[6] != 0 || ref.Obs[7] != 0 || ref.Terminated {
				contact = true // first ground contact: a leg, or the body (a crash)
			}
			o, r, term, trunc := e.Step(f.Actions[t1-1])
			if o[6] != 0 || o[7] != 0 || e.gameOver {
				contact = true
			}
			compare(t1, o, ref.Obs)
			if term || trunc {
				endStep, endCause = t1, cause(r, term, trunc)
				break
			}
		}
		if endStep == 0 {
			endStep, endCause = len(f.Steps)-1, "running"
		}
		last := f.Steps[len(f.Steps)-1]
		refCause := cause(last.Reward, last.Terminated, last.Truncated)
		if endCause == refCause {
			sameCause++
		} else {
			t.Errorf("%s: episode ended %q at step %d, Gymnasium's %q at step %d", name, endCause, endStep, refCause, last.Step)
		}
		if endStep == last.Step {
			sameStep++
		}
		t.Logf("%s: ended %q at step %d (Gymnasium: %q at %d)", name, endCause, endStep, refCause, last.Step)
	}
	frac := float64(sameStep) / float64(len(paths))
	t.Logf("worst observation error: %.3g over the first 10 steps, %.3g until the first ground contact; same termination cause in %d of %d, same step in %d (%.0f%%)",
		worst10, worstContact, sameCause, len(paths), sameStep, 100*frac)
	if frac < 0.8 {
		t.Errorf("the same termination step in only %.0f%% of the episodes (want ≥ 80%%)", 100*frac)
	}
}

// TestHeuristicMatchesGymnasium feeds Gymnasium's recorded observations to
// Heuristic and checks it returns the actions Gymnasium's heuristic chose
// (rounded to float32, as recorded) at every step of the reference episodes.
func TestHeuristicMatchesGymnasium(t *testing.T) {
	paths, _ := filepath.Glob(filepath.Join(refDir, "heuristic-*.json.gz"))
	act := make([]float64, 2)
	checked := 0
	for _, path := range paths {
		f := loadRef(t, path)
		for i, a := range f.Actions {
			Heuristic(act, f.Steps[i].Obs, true)
			for j := range 2 {
				if float64(float32(act[j])) != a[j] {
					t.Fatalf("%s step %d: Heuristic gives %v, Gymnasium %v", filepath.Base(path), i, act, a)
				}
			}
			checked++
		}
	}
	if checked < 1000 {
		t.Fatalf("checked only %d actions", checked)
	}
	t.Logf("%d heuristic actions identical to Gymnasium's", checked)
}
