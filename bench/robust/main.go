// Command robust measures every fusion method of the registry against
// Byzantine clients through the federation: every method (and its
// per-client-σ, declared-tolerance and demo-weighted variants) × attack × f
// attackers, each case one task, run by federation.RunInProcess (the same
// Coordinator, validation of submissions, store and RunClient as the
// networked "fedirl server" and "fedirl client", over the in-process
// transport) or, with --server, created over gRPC on a running "fedirl
// server" whose every client is federation.RunClient over its own gRPC
// connection (what "fedirl client" runs), at the server's default norm bounds (max_theta_norm 1e6,
// max_reward_norm 1e9). The honest clients are the ten grid-world 10×10
// clients of seed 1 that run.sh exports and fits with "fedirl irl"; each
// fused θ is scored by EPIC to the true reward on client 0's MDP (as
// "fedirl reward distance --spec c0/mdp.json c0/truth.json fused.json").
//
//	go run ./bench/robust --gw DIR --out bench/robust/results
//	go run ./bench/robust --gw DIR --server 127.0.0.1:PORT --admin-token-file admin.tok --out DIR
//
// It writes results.json (every case), results.csv and results.md (the
// tables the README quotes). bench/robust/run.sh is the whole pipeline.
package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"gonum.org/v1/gonum/floats"

	"github.com/fedirl/fedirl/pkg/experiments/attack"
	"github.com/fedirl/fedirl/pkg/features"
	"github.com/fedirl/fedirl/pkg/federation"
	"github.com/fedirl/fedirl/pkg/fusion"
	"github.com/fedirl/fedirl/pkg/irl"
	"github.com/fedirl/fedirl/pkg/tasks"
)

// The server's default bounds; the attacks sit just inside them.
const (
	thetaBound  = 1e6 // federation.TaskSpec.MaxThetaNorm's default
	rewardBound = 1e9 // federation.DefaultMaxRewardNorm
	inside      = 0.999999
	hugeCount   = math.MaxInt32 // the demos attacker's declared count
	honestCount = 20            // every honest client's declared count
	gridSize    = 10
	gridSeed    = 1
)

// variant is one fusion configuration of the table.
type variant struct {
	Name string         `json:"name"`
	Opt  fusion.Options `json:"options"`
	// ByzantineFromF sets Options.Byzantine to the case's f (the operator
	// declares the tolerance the task needs).
	ByzantineFromF bool `json:"byzantine_from_f,omitempty"`
}

// Case is one measured federation.
type Case struct {
	Variant string `json:"variant"`
	Attack  string `json:"attack"`
	F       int    `json:"f"`
	K       int    `json:"k"`
	Demos   bool   `json:"demos_weighting"`
	// EPIC to the true reward (NaN when undefined: a constant fused reward).
	EPIC      float64   `json:"epic"`
	Undefined string    `json:"undefined,omitempty"`
	Theta     []float64 `json:"theta"`
	// AttackerWeight is the attackers' total normalized weight.
	AttackerWeight float64 `json:"attacker_weight"`
	// MinAttackerScore and MaxHonestScore are the outlier scores; Flagged
	// says every attacker is above fusion.OutlierThreshold and no honest
	// client is; Warning is the fused result's warning.
	MinAttackerScore float64 `json:"min_attacker_score"`
	MaxHonestScore   float64 `json:"max_honest_score"`
	Flagged          bool    `json:"flagged"`
	HonestFlagged    bool    `json:"honest_flagged"`
	Warning          string  `json:"warning,omitempty"`
	Error            string  `json:"error,omitempty"`
	Seconds          float64 `json:"seconds"`
}

// fixed is a Learner that returns a precomputed submission.
type fixed struct{ res federation.LocalResult }

func (l fixed) Learn(context.Context, federation.TaskSpec, []float64) (federation.LocalResult, error) {
	return l.res, nil
}

func main() {
	gw := flag.String("gw", "", "folder with c0 … c9 (each: mdp.json, truth.json, theta.json from \"fedirl irl\")")
	out := flag.String("out", "bench/robust/results", "output folder")
	only := flag.String("only", "", "comma-separated variant names to run (default: all)")
	server := flag.String("server", "", "address of a running \"fedirl server\" (loopback, plaintext) to run every case through, over gRPC; default: federation.RunInProcess")
	adminFile := flag.String("admin-token-file", "", "the server's admin token file (with --server)")
	flag.Parse()
	if *gw == "" {
		fail(errors.New("--gw is required"))
	}
	var tr transport = inProcess{}
	if *server != "" {
		b, err := os.ReadFile(*adminFile)
		if err != nil {
			fail(fmt.Errorf("--admin-token-file: %w", err))
		}
		tr = remote{addr: *server, admin: strings.TrimSpace(string(b))}
	}
	if err := run(*gw, *out, *only, tr); err != nil {
		fail(err)
	}
}

// transport runs one task: every client through federation.RunClient, and
// returns the fused result of its one round.
type transport interface {
	run(ctx context.Context, spec federation.TaskSpec, clients []federation.LocalClient) (federation.FusedResult, error)
	name() string
}

// inProcess is federation.RunInProcess with the server's fuser.
type inProcess struct{}

func (inProcess) name() string {
	return "federation.RunInProcess (the server's coordinator, in-process transport)"
}

func (inProcess) run(ctx context.Context, spec federation.TaskSpec, clients []federation.LocalClient) (federation.FusedResult, error) {
	fused, _, err := federation.RunInProcess(ctx, spec, clients, federation.InProcessConfig{Fuser: tasks.NewFuser(),
		Client: federation.ClientConfig{PollWait: 50 * time.Millisecond}})
	if err != nil {
		return federation.FusedResult{}, err
	}
	return fused[0], nil
}

// remote creates the task on a running "fedirl server" with the admin token
// and runs every client over its own gRPC connection.
type remote struct{ addr, admin string }

func (r remote) name() string {
	return "a running \"fedirl server\" over gRPC on loopback (" + r.addr + ")"
}

func (r remote) run(ctx context.Context, spec federation.TaskSpec, clients []federation.LocalClient) (federation.FusedResult, error) {
	adm, err := federation.DialGRPC(r.addr, federation.DialConfig{Token: r.admin})
	if err != nil {
		return federation.FusedResult{}, err
	}
	defer adm.Close()
	ids := make([]string, len(clients))
	for i, c := range clients {
		ids[i] = c.ID
	}
	tokens, err := adm.CreateTask(ctx, spec, ids)
	if err != nil {
		return federation.FusedResult{}, fmt.Errorf("creating task %s: %w", spec.ID, err)
	}
	reps := make([]federation.ClientReport, len(clients))
	errs := make([]error, len(clients))
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g, err := federation.DialGRPC(r.addr, federation.DialConfig{Token: tokens[c.ID]})
			if err != nil {
				errs[i] = err
				return
			}
			defer g.Close()
			reps[i], errs[i] = federation.RunClient(ctx, g, c.Learner, federation.ClientConfig{TaskID: spec.ID, ClientID: c.ID, PollWait: time.Second})
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return federation.FusedResult{}, err
	}
	return reps[0].Final, nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "robust:", err)
	os.Exit(1)
}

func run(gw, out, only string, tr transport) error {
	var honest [][]float64
	for i := 0; ; i++ {
		dir := filepath.Join(gw, fmt.Sprintf("c%d", i))
		if _, err := os.Stat(dir); err != nil {
			break
		}
		th, err := readTheta(filepath.Join(dir, "theta.json"))
		if err != nil {
			return err
		}
		honest = append(honest, th)
	}
	if len(honest) < 3 {
		return fmt.Errorf("%s: %d clients c0 …, want ≥ 3", gw, len(honest))
	}
	m, phi, err := irl.LoadSpec(filepath.Join(gw, "c0", "mdp.json"))
	if err != nil {
		return err
	}
	truth, err := readTheta(filepath.Join(gw, "c0", "truth.json"))
	if err != nil {
		return err
	}
	rTrue := features.Reward(nil, phi, truth)
	epic := func(th []float64) (float64, string) {
		res, err := irl.EPIC(m, features.Reward(nil, phi, th), rTrue, irl.EPICOptions{})
		if errors.Is(err, irl.ErrConstantReward) {
			return math.NaN(), err.Error()
		}
		if err != nil {
			return math.NaN(), err.Error()
		}
		return res.Distance, ""
	}
	probeSpec, dim, err := tasks.GridWorldProbe(gridSize, gridSeed, federation.Limits{})
	if err != nil {
		return err
	}
	probe, _, err := tasks.ProbeOf(federation.TaskSpec{ID: "probe", EnvFamily: "gridworld", Probe: probeSpec, ThetaDim: dim,
		Quorum: 1, MinClients: 1, Rounds: 1})
	if err != nil {
		return err
	}
	hmean := make([]float64, dim)
	for _, th := range honest {
		floats.AddScaled(hmean, 1/float64(len(honest)), th)
	}
	u := slices.Clone(hmean)
	floats.Scale(1/floats.Norm(u, 2), u)
	variants := allVariants()
	if only != "" {
		keep := strings.Split(only, ",")
		variants = slices.DeleteFunc(variants, func(v variant) bool { return !slices.Contains(keep, v.Name) })
	}
	ctx := context.Background()
	var cases []Case
	seq := 0
	fuse := func(v variant, attackName string, f int, demos bool, attackers []federation.LocalResult) Case {
		opt := v.Opt
		if v.ByzantineFromF {
			ff := f
			opt.Byzantine = &ff
		}
		if demos {
			opt.Weighting = fusion.WeightingDemos
		}
		c := Case{Variant: v.Name, Attack: attackName, F: f, K: len(honest) + len(attackers), Demos: demos}
		var clients []federation.LocalClient
		for i, th := range honest {
			clients = append(clients, federation.LocalClient{ID: fmt.Sprintf("c%d", i),
				Learner: fixed{federation.LocalResult{Theta: th, DemoCount: honestCount, Converged: true}}})
		}
		for j, a := range attackers {
			clients = append(clients, federation.LocalClient{ID: fmt.Sprintf("m%d", j), Learner: fixed{a}})
		}
		fo, err := tasks.EncodeFusion(opt)
		if err != nil {
			c.Error = err.Error()
			return c
		}
		seq++ // task ids are unique on one server (the demos table repeats cases of the main one)
		spec := federation.TaskSpec{ID: strings.NewReplacer("/", ".", "=", "").Replace(fmt.Sprintf("%d-%s-%s-f%d-%v", seq, v.Name, attackName, f, demos)), EnvFamily: "gridworld",
			Probe: probeSpec, ThetaDim: dim, Quorum: len(clients), MinClients: len(clients), Rounds: 1, Fusion: fo}
		t0 := time.Now()
		r, err := tr.run(ctx, spec, clients)
		c.Seconds = time.Since(t0).Seconds()
		if err != nil {
			c.Error = err.Error()
			c.EPIC = math.NaN()
			return c
		}
		c.Theta, c.Warning = r.Theta, r.Warning
		c.EPIC, c.Undefined = epic(r.Theta)
		// Honest clients are c0 …, attackers m0 … (by name: the result lists
		// the clients in the coordinator's order).
		c.MaxHonestScore, c.MinAttackerScore = math.Inf(-1), math.Inf(1)
		for i, id := range r.Clients {
			if strings.HasPrefix(id, "m") {
				c.MinAttackerScore = min(c.MinAttackerScore, r.OutlierScores[i])
				c.AttackerWeight += r.Weights[i]
			} else {
				c.MaxHonestScore = max(c.MaxHonestScore, r.OutlierScores[i])
			}
		}
		c.HonestFlagged = c.MaxHonestScore > fusion.OutlierThreshold
		if len(attackers) > 0 {
			c.Flagged = c.MinAttackerScore > fusion.OutlierThreshold && !c.HonestFlagged
		} else {
			c.MinAttackerScore = 0
		}
		return c
	}
	for _, v := range variants {
		cl := fuse(v, "none", 0, false, nil)
		cases = append(cases, cl)
		fmt.Fprintf(os.Stderr, "%-34s clean EPIC %.3f (max honest score %.2f) %s\n", v.Name, cl.EPIC, cl.MaxHonestScore, cl.Error)
		accepts, _ := fusion.AcceptsRewards(v.Opt.Method)
		clean := cl.Theta
		if clean == nil {
			clean = hmean
		}
		for _, f := range []int{1, 3} {
			for _, a := range allAttacks() {
				subs, err := makeAttack(a, f, hmean, u, clean, probe, accepts)
				if err != nil {
					return err
				}
				c := fuse(v, a, f, false, subs)
				cases = append(cases, c)
				fmt.Fprintf(os.Stderr, "  %-13s f=%d EPIC %.3f  attacker score %.2f, honest max %.2f %s\n", a, f, c.EPIC, c.MinAttackerScore, c.MaxHonestScore, c.Error)
			}
			for _, a := range demosAttacks {
				subs, err := makeAttack(a, f, hmean, u, clean, probe, accepts)
				if err != nil {
					return err
				}
				for i := range subs {
					subs[i].DemoCount = hugeCount
				}
				cases = append(cases, fuse(v, a, f, false, subs), fuse(v, a, f, true, subs))
				d := cases[len(cases)-1]
				fmt.Fprintf(os.Stderr, "  demos %-7s f=%d EPIC uniform %.3f demos %.3f (weight %.3f)\n", a, f, cases[len(cases)-2].EPIC, d.EPIC, d.AttackerWeight)
			}
		}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	return writeResults(out, variants, cases, len(honest), tr.name())
}

// attackNames are the attacks of the main table, each sent by every attacker:
//   - scaled: the honest mean's direction u at the θ norm bound (the
//     poisoning benchmark's 1000·θ taken to the bound);
//   - sign-flip: −u at the norm bound;
//   - reversed-1x, reversed-2x: −hmean and −2·hmean, a reversed θ of honest
//     scale (the notes' stealthy attacker);
//   - spike: a reward of 0.999·1e9 at the probe point the clean fusion rates
//     lowest, as a reward contribution where the method accepts rewards, else
//     the θ that best carries that spike (attack.SpikeTheta's least squares)
//     scaled to the norm bound;
//   - noise: a Gaussian θ at the norm bound, a fresh seeded draw per attacker.
//   - line-s: −u·s for every s of lineScales (the notes' omniscient line
//     search); the tables show the worst s.
var attackNames = []string{"scaled", "sign-flip", "reversed-1x", "reversed-2x", "spike", "noise"}

// lineScales are the norms of the line-search attack −u·s.
var lineScales = []float64{0.03, 0.1, 0.3, 1, 3, 10, 100, 1e4}

func lineName(s float64) string { return "line-" + strconv.FormatFloat(s, 'g', -1, 64) }

// allAttacks is attackNames then the line search.
func allAttacks() []string {
	out := slices.Clone(attackNames)
	for _, s := range lineScales {
		out = append(out, lineName(s))
	}
	return out
}

// demosAttacks are sent with a declared demonstration count of 2³¹−1, fused
// under uniform and under demos weighting.
var demosAttacks = []string{"reversed-1x", "reversed-11x"}

func makeAttack(name string, f int, hmean, u, clean []float64, probe fusion.Probe, acceptsRewards bool) ([]federation.LocalResult, error) {
	scaled := func(v []float64, s float64) []float64 {
		out := slices.Clone(v)
		floats.Scale(s, out)
		return out
	}
	out := make([]federation.LocalResult, f)
	for j := range out {
		out[j] = federation.LocalResult{DemoCount: honestCount, Converged: true}
		switch name {
		case "scaled":
			out[j].Theta = scaled(u, inside*thetaBound)
		case "sign-flip":
			out[j].Theta = scaled(u, -inside*thetaBound)
		case "reversed-1x":
			out[j].Theta = scaled(hmean, -1)
		case "reversed-2x":
			out[j].Theta = scaled(hmean, -2)
		case "reversed-11x":
			out[j].Theta = scaled(hmean, -11)
		case lineName(0.03), lineName(0.1), lineName(0.3), lineName(1), lineName(3), lineName(10), lineName(100), lineName(1e4):
			v, err := strconv.ParseFloat(strings.TrimPrefix(name, "line-"), 64)
			if err != nil {
				return nil, err
			}
			out[j].Theta = scaled(u, -v)
		case "spike":
			r := features.Reward(nil, probe.Phi, clean)
			x := 0
			for i, v := range r {
				if v < r[x] {
					x = i
				}
			}
			spike := make([]float64, len(r))
			spike[x] = 0.999 * rewardBound
			if acceptsRewards {
				out[j].Reward = spike
				continue
			}
			th, err := attack.SpikeTheta(probe.Phi, x, 1, 1)
			if err != nil {
				return nil, err
			}
			out[j].Theta = scaled(th, inside*thetaBound/floats.Norm(th, 2))
		case "noise":
			rng := rand.New(rand.NewPCG(gridSeed, uint64(f*100+j)))
			out[j].Theta = attack.GaussianTheta(rng, len(hmean), inside*thetaBound)
		default:
			return nil, fmt.Errorf("unknown attack %q", name)
		}
	}
	return out, nil
}

// allVariants lists every registry method with its defaults, then the
// per-client-σ variant of every reward-space method (the shared-σ one for
// wasserstein-median, whose default is per client), the trimmed means with
// the tolerance declared (byzantine = f), in registry order.
func allVariants() []variant {
	var vs []variant
	for _, name := range fusion.Methods() {
		vs = append(vs, variant{Name: name, Opt: fusion.Options{Method: name}})
		mm, _ := fusion.Lookup(name)
		switch {
		case name == fusion.MethodWassersteinMedian: // per-client σ by default
			vs = append(vs, variant{Name: name + "/shared", Opt: fusion.Options{Method: name, SigmaMode: fusion.SigmaShared}})
		case mm.Space() == fusion.RewardSpace:
			vs = append(vs, variant{Name: name + "/per-client", Opt: fusion.Options{Method: name, SigmaMode: fusion.SigmaPerClient}})
		}
		switch name {
		case fusion.MethodTrimmedMean:
			vs = append(vs, variant{Name: name + "/byzantine=f", Opt: fusion.Options{Method: name}, ByzantineFromF: true})
		case fusion.MethodRewardTrimmedMean:
			vs = append(vs, variant{Name: name + "/per-client/byzantine=f", Opt: fusion.Options{Method: name, SigmaMode: fusion.SigmaPerClient}, ByzantineFromF: true})
		}
	}
	return vs
}

func readTheta(path string) ([]float64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var v struct {
		Theta []float64 `json:"theta"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(v.Theta) == 0 {
		return nil, fmt.Errorf("%s: no theta", path)
	}
	return v.Theta, nil
}

func fmtEPIC(c Case) string {
	switch {
	case c.Error != "":
		return "error"
	case math.IsNaN(c.EPIC):
		return "undef."
	}
	return strconv.FormatFloat(c.EPIC, 'f', 2, 64)
}

func writeResults(dir string, variants []variant, cases []Case, k int, via string) error {
	js := make([]map[string]any, len(cases))
	for i, c := range cases {
		b, _ := json.Marshal(struct {
			Case
			EPIC any `json:"epic"`
		}{c, nanNull(c.EPIC)})
		_ = json.Unmarshal(b, &js[i])
	}
	b, err := json.MarshalIndent(map[string]any{"transport": via, "honest_clients": k, "outlier_threshold": fusion.OutlierThreshold,
		"theta_bound": thetaBound, "reward_bound": rewardBound, "variants": variants, "cases": js}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, "results.csv"))
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	w.Write([]string{"variant", "attack", "f", "k", "demos_weighting", "epic", "attacker_weight", "min_attacker_score", "max_honest_score", "flagged", "error"})
	for _, c := range cases {
		w.Write([]string{c.Variant, c.Attack, strconv.Itoa(c.F), strconv.Itoa(c.K), strconv.FormatBool(c.Demos), fmtEPIC(c),
			strconv.FormatFloat(c.AttackerWeight, 'g', 4, 64), strconv.FormatFloat(c.MinAttackerScore, 'g', 4, 64),
			strconv.FormatFloat(c.MaxHonestScore, 'g', 4, 64), strconv.FormatBool(c.Flagged), c.Error})
	}
	w.Flush()
	if err := errors.Join(w.Error(), f.Close()); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "results.md"), []byte(markdown(variants, cases, k, via)), 0o644)
}

func nanNull(v float64) any {
	if math.IsNaN(v) {
		return nil
	}
	return v
}

func find(cases []Case, v, a string, f int, demos bool) (Case, bool) {
	for _, c := range cases {
		if c.Variant == v && c.Attack == a && c.F == f && c.Demos == demos {
			return c, true
		}
	}
	return Case{}, false
}

func markdown(variants []variant, cases []Case, k int, via string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Robust fusion under attack (bench/robust)\n\n")
	fmt.Fprintf(&b, "%d honest grid-world 10×10 clients (seed 1) plus f attackers, every case one task through %s, at the default bounds max_theta_norm %g, max_reward_norm %g. EPIC to the true reward on client 0's MDP (0 = θ*'s reward, 1 = its opposite). The worst column is the largest EPIC over the attacks, the line search −u·s (u the honest mean's direction, s = 0.03 … 10⁴) included. \"flagged\" counts the attacks whose attackers all score above the outlier threshold %g while no honest client does.\n\n",
		k, via, thetaBound, rewardBound, fusion.OutlierThreshold)
	for _, f := range []int{1, 3} {
		fmt.Fprintf(&b, "## %d attacker%s of %d\n\n| method | clean | %s | worst −u·s (s) | **worst** | flagged |\n|---|---|%s---|---|---|\n",
			f, map[bool]string{true: "s", false: ""}[f > 1], k+f, strings.Join(attackNames, " | "), strings.Repeat("---|", len(attackNames)))
		for _, v := range variants {
			clean, _ := find(cases, v.Name, "none", 0, false)
			row := []string{v.Name, fmtEPIC(clean)}
			worst, flagged := 0.0, 0
			for _, a := range attackNames {
				c, _ := find(cases, v.Name, a, f, false)
				row = append(row, fmtEPIC(c))
				if c.Error != "" || math.IsNaN(c.EPIC) {
					worst = math.Inf(1)
				} else {
					worst = max(worst, c.EPIC)
				}
				if c.Flagged {
					flagged++
				}
			}
			lw, ls := -1.0, ""
			for _, sc := range lineScales {
				c, _ := find(cases, v.Name, lineName(sc), f, false)
				if c.Error != "" || math.IsNaN(c.EPIC) {
					worst, lw, ls = math.Inf(1), math.Inf(1), strconv.FormatFloat(sc, 'g', -1, 64)
					continue
				}
				if c.EPIC > lw {
					lw, ls = c.EPIC, strconv.FormatFloat(sc, 'g', -1, 64)
				}
				worst = max(worst, c.EPIC)
				if c.Flagged {
					flagged++
				}
			}
			row = append(row, fmt.Sprintf("%.2f (%s)", lw, ls))
			ws := "**" + strconv.FormatFloat(worst, 'f', 2, 64) + "**"
			if math.IsInf(worst, 1) {
				ws = "**error/undef.**"
			}
			row = append(row, ws, fmt.Sprintf("%d/%d", flagged, len(attackNames)+len(lineScales)))
			fmt.Fprintf(&b, "| %s |\n", strings.Join(row, " | "))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "## Outlier scores (robust z against the median client; threshold %g)\n\nPer attack, the smallest attacker score / the largest honest score (the barycenter's tasks; the scores do not depend on the method).\n\n| attack | 1 of %d | 3 of %d |\n|---|---|---|\n", fusion.OutlierThreshold, k+1, k+3)
	for _, a := range allAttacks() {
		c1, _ := find(cases, fusion.MethodBarycenter, a, 1, false)
		c3, _ := find(cases, fusion.MethodBarycenter, a, 3, false)
		fmt.Fprintf(&b, "| %s | %.3g / %.3g | %.3g / %.3g |\n", a, c1.MinAttackerScore, c1.MaxHonestScore, c3.MinAttackerScore, c3.MaxHonestScore)
	}
	fmt.Fprintf(&b, "\n## Declared demonstration counts (attackers declare 2³¹−1; weighting uniform vs demos)\n\nEPIC uniform / demos (the attackers' total weight under demos).\n\n| method | %s |\n|---|%s\n", strings.Join(func() []string {
		var h []string
		for _, f := range []int{1, 3} {
			for _, a := range demosAttacks {
				h = append(h, fmt.Sprintf("%s, f = %d", a, f))
			}
		}
		return h
	}(), " | "), strings.Repeat("---|", 2*len(demosAttacks)))
	for _, v := range variants {
		row := []string{v.Name}
		for _, f := range []int{1, 3} {
			for _, a := range demosAttacks {
				cu, _ := find(cases, v.Name, a, f, false)
				cd, _ := find(cases, v.Name, a, f, true)
				row = append(row, fmt.Sprintf("%s / %s (%.3f)", fmtEPIC(cu), fmtEPIC(cd), cd.AttackerWeight))
			}
		}
		fmt.Fprintf(&b, "| %s |\n", strings.Join(row, " | "))
	}
	return b.String()
}
