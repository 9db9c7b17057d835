package gridworld

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/fedirl/fedirl/pkg/experiments/jointfit"
	"github.com/fedirl/fedirl/pkg/federation"
	"github.com/fedirl/fedirl/pkg/fusion"
	"github.com/fedirl/fedirl/pkg/irl"
	"github.com/fedirl/fedirl/pkg/jointopt"
)

// The pooled oracle and the personalized rewards of a cell (jointfit): the
// pooled θ is fitted to every client's demonstrations, each under its own
// environment's MDP, with the fusions' client weights α (uniform, or by
// demonstration steps under barycenter.weights: demonstrations, capped as
// fusion's demos weighting caps them), and evaluated as a fused column;
// each client's personalized θ_i^p around the pooled θ is evaluated on its
// own environment, like its local θ_i.

// Columns of the joint block.
const (
	ColPooled       = jointfit.ColPooled
	ColPersonalized = jointfit.ColPersonalized
)

// jointCols are the reference columns the joint block adds to the fused
// ones (evaluated in distribution and held out).
func (c Config) jointCols() []string {
	if c.Joint.Pooled {
		return []string{ColPooled}
	}
	return nil
}

// clientCols are the per-client columns evaluated in distribution only:
// ColLocal and, with the joint block, ColPersonalized.
func (c Config) clientCols() []string {
	if c.Joint.Personalized {
		return []string{ColLocal, ColPersonalized}
	}
	return []string{ColLocal}
}

// jointClients returns the jointfit clients of a cell with the fusions' weights.
func (c Config) jointClients(clients []*studyClient) ([]jointfit.Client, error) {
	opt := c.weighting(fusion.Options{})
	counts := make([]int, len(clients))
	for i, cl := range clients {
		counts[i] = cl.demoSteps
	}
	w, err := fusion.Weights(opt.ClientWeights(counts), len(clients))
	if err != nil {
		return nil, err
	}
	out := make([]jointfit.Client, len(clients))
	for i, cl := range clients {
		cfg := jointfit.TightSolver(c.IRL.config(c.IRL.IRLIterations))
		out[i] = jointfit.Client{MDP: cl.env.MDP, Phi: cl.env.Phi, Demos: cl.demos, IRL: cfg, Weight: w[i]}
	}
	return out, nil
}

// fitJoint fills f.Fused[ColPooled], f.Pooled, f.Personal and
// f.Personalization for the cell's clients.
func (c Config) fitJoint(ctx context.Context, f *Fit, clients []*studyClient) error {
	if !c.Joint.Pooled {
		return nil
	}
	jc, err := c.jointClients(clients)
	if err != nil {
		return err
	}
	p, err := jointfit.FitPooled(ctx, jc, c.Joint)
	if err != nil {
		return err
	}
	f.Pooled = &p
	f.Fused[ColPooled] = p.Theta
	if !c.Joint.Personalized {
		return nil
	}
	f.Personal = make([]jointfit.Personal, len(jc))
	for i, cl := range jc {
		if f.Personal[i], err = jointfit.Personalize(ctx, cl, p.Theta, c.Joint); err != nil {
			return fmt.Errorf("client %d personalization: %w", i, err)
		}
	}
	return nil
}

// fusedCols are the columns with one θ for all clients, evaluated in
// distribution and held out: the fusion methods, then the joint block's.
func (c Config) fusedCols() []string {
	return append(slices.Clone(c.methods()), c.jointCols()...)
}

// jointMarkdown writes the joint block's diagnostics of Table 1's cells:
// the pooled fits' convergence, the identifiability gain and the
// personalization weights chosen.
func (s *Study) jointMarkdown(b *bytes.Buffer) {
	if !s.Config.Joint.Pooled {
		return
	}
	fmt.Fprintf(b, "\nThe pooled oracle (one θ fitted to every client's demonstrations under its own dynamics, Newton to ‖∇‖ ≤ %g) and the identifiability of θ: the data curvature −∇²L − λI at the pooled θ read on the joint curvature's range (jointfit.Identifiability): its λ_min jointly (Σα_i) and of the best single client there; gain = joint / best single (> 1: the federation pins down a direction no client alone does). Personalized: each client's μ chosen on its last %g of demonstrations (c·s for c in %v, or the pooled θ itself).\n\n",
		s.Config.Joint.GradTol, s.Config.Joint.ValidationFraction, s.Config.Joint.ProxCandidates)
	b.WriteString("| Environment | Seeds | pooled converged | Newton rounds (max) | federated joint: rounds (max), ‖θ_joint − θ_pooled‖/‖θ_pooled‖ (max) | joint rank (min) / d | λ_min joint (median) | λ_min best client (median) | gain > 1 | personalized: μ = 0 / between / pooled θ |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for k, e := range s.Config.Environments {
		conv, maxRounds, gainAbove, minRank, dim := 0, 0, 0, math.MaxInt, 0
		var joint, best []float64
		var own, mid, center, jointRounds int
		jointErr := math.NaN()
		for _, f := range s.Cells[k] {
			if jr, ok := f.Joint[fusion.MethodJoint]; ok && f.Pooled != nil {
				jointRounds = max(jointRounds, jr.Rounds)
				if e := relDist(f.Fused[fusion.MethodJoint], f.Pooled.Theta); math.IsNaN(jointErr) || e > jointErr {
					jointErr = e
				}
			}
			p := f.Pooled
			if p == nil {
				continue
			}
			if p.Converged {
				conv++
			}
			maxRounds = max(maxRounds, p.Rounds)
			minRank, dim = min(minRank, p.Ident.JointRank), p.Ident.Dim
			joint = append(joint, p.Ident.JointMinEig)
			best = append(best, slices.Max(p.Ident.LocalMinEig))
			if g := p.Ident.Gain; g != nil && *g > 1 {
				gainAbove++
			}
			for _, pc := range f.Personal {
				switch {
				case pc.Choice.Center:
					center++
				case pc.Choice.Mu == 0:
					own++
				default:
					mid++
				}
			}
		}
		jointCell := "–"
		if jointRounds > 0 {
			jointCell = fmt.Sprintf("%d, %.2g", jointRounds, jointErr)
		}
		fmt.Fprintf(b, "| %d×%d | %d | %d/%d | %d | %s | %d / %d | %.3g | %.3g | %d/%d | %d / %d / %d |\n", e.GridSize, e.GridSize, len(s.Cells[k]),
			conv, len(s.Cells[k]), maxRounds, jointCell, minRank, dim, median(joint), median(best), gainAbove, len(s.Cells[k]), own, mid, center)
	}
}

// relDist is ‖a − b‖₂/‖b‖₂.
func relDist(a, b []float64) float64 {
	num, den := 0.0, 0.0
	for i := range b {
		num += (a[i] - b[i]) * (a[i] - b[i])
		den += b[i] * b[i]
	}
	return math.Sqrt(num / den)
}

func median(x []float64) float64 {
	if len(x) == 0 {
		return math.NaN()
	}
	y := slices.Sorted(slices.Values(x))
	n := len(y)
	if n%2 == 1 {
		return y[n/2]
	}
	return (y[n/2-1] + y[n/2]) / 2
}

// Evaluate implements federation.JointLearner: the client's MaxEnt
// objective under its own environment (the cell's irl settings, value
// solves to 1e-10 as the pooled column's) at θ, built anew for each θ so
// that an evaluation is a function of θ alone; the count is the
// demonstration steps the study's demonstrations weighting uses.
func (l *studyClient) Evaluate(ctx context.Context, spec federation.TaskSpec, theta []float64) (jointopt.Eval, int, error) {
	if err := ctx.Err(); err != nil {
		return jointopt.Eval{}, 0, err
	}
	cfg := jointfit.TightSolver(l.cfg.config(l.cfg.IRLIterations))
	o, err := irl.NewObjective(l.env.MDP, l.env.Phi, l.demos, cfg)
	if err != nil {
		return jointopt.Eval{}, 0, err
	}
	defer o.Close()
	if len(theta) != o.Dim() {
		return jointopt.Eval{}, 0, fmt.Errorf("task %s: θ has %d entries, the client's features %d", spec.ID, len(theta), o.Dim())
	}
	return o.Evaluate(theta, 0), l.demoSteps, nil
}

var _ federation.JointLearner = (*studyClient)(nil)

// jointResult records a joint column: the last round's θ (the federated
// fit of the clients' summed likelihood) and its rounds, checked to have
// taken every client.
func (c Config) jointResult(f *Fit, col, id string, fused []federation.FusedResult, clients []*studyClient) error {
	if len(fused) == 0 {
		return fmt.Errorf("federation %s: no round fused", id)
	}
	last := fused[len(fused)-1]
	if len(last.Clients) != len(clients) || last.Joint == nil {
		return fmt.Errorf("federation %s: the last of %d rounds has %d clients and no joint record", id, len(fused), len(last.Clients))
	}
	f.Fused[col] = last.Theta
	if f.Joint == nil {
		f.Joint = map[string]JointRounds{}
	}
	f.Joint[col] = JointRounds{Rounds: len(fused), Reason: last.Joint.Reason, GradNorm: last.Joint.GradNorm}
	return nil
}

// JointRounds describes a joint column's federated fit.
type JointRounds struct {
	Rounds   int     `json:"rounds"`
	Reason   string  `json:"reason"`
	GradNorm float64 `json:"grad_norm"`
}
