package sampleirl

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/fedirl/fedirl/pkg/rl/ppo"
)

// demosDigest is the SHA-256 of the demonstrations' JSON, which a resumed
// run checks against its checkpoint's.
func demosDigest(demos []Trajectory) (string, error) {
	b, err := json.Marshal(demos)
	if err != nil {
		return "", fmt.Errorf("sampleirl: demonstrations: %w", err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:]), nil
}

// MLPCheckpoint is the content of one iteration's checkpoint file: the
// whole state the next iteration starts from.
type MLPCheckpoint struct {
	// Config is the resolved configuration; DemosSHA256 the digest of the
	// demonstrations' JSON.
	Config      MLPConfig `json:"config"`
	DemosSHA256 string    `json:"demos_sha256"`
	// Iteration is k.
	Iteration int `json:"iteration"`
	// Weights is w_k, PolicyWeights w_{k−1} (the reward π_k trained on).
	Weights       []float64 `json:"weights"`
	PolicyWeights []float64 `json:"policy_weights"`
	// AdamStep, AdamM1 and AdamM2 are the reward optimizer's state.
	AdamStep int       `json:"adam_step"`
	AdamM1   []float64 `json:"adam_m1"`
	AdamM2   []float64 `json:"adam_m2"`
	// Policy is π_k.
	Policy *ppo.Checkpoint `json:"policy"`
	// History holds iterations 1..k; Converged and StopReason the result's.
	History    []MLPIteration `json:"history"`
	Converged  bool           `json:"converged"`
	StopReason string         `json:"stop_reason"`
}

// mlpCheckpointName is iteration k's file name.
func mlpCheckpointName(k int) string { return fmt.Sprintf("mlp-iter-%04d.json", k) }

// writeCheckpoint writes iteration k's state atomically.
func (l *mlpLearner) writeCheckpoint(k int) error {
	pc := l.cfg.PPO
	ck, err := l.pol.Checkpoint(&pc)
	if err != nil {
		return fmt.Errorf("sampleirl: checkpoint: %w", err)
	}
	c := MLPCheckpoint{Config: l.cfg, DemosSHA256: l.digest, Iteration: k, Weights: l.net.Weights(), PolicyWeights: l.prev,
		AdamStep: l.opt.t, AdamM1: l.opt.m1, AdamM2: l.opt.m2, Policy: ck, History: l.res.History,
		Converged: l.res.Converged, StopReason: l.res.StopReason}
	b, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("sampleirl: checkpoint: %w", err)
	}
	if err := os.MkdirAll(l.cfg.CheckpointDir, 0o755); err != nil {
		return fmt.Errorf("sampleirl: checkpoint: %w", err)
	}
	path := filepath.Join(l.cfg.CheckpointDir, mlpCheckpointName(k))
	if err := os.WriteFile(path+".tmp", b, 0o644); err != nil {
		return fmt.Errorf("sampleirl: checkpoint %s: %w", path, err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		return fmt.Errorf("sampleirl: checkpoint %s: %w", path, err)
	}
	return nil
}

// resume restores the state of the last checkpoint in CheckpointDir and
// returns its iteration (0 when there is none) and whether the run had
// finished there.
func (l *mlpLearner) resume() (int, bool, error) {
	var last int
	for k := 1; k <= l.cfg.MaxIter; k++ {
		if _, err := os.Stat(filepath.Join(l.cfg.CheckpointDir, mlpCheckpointName(k))); err != nil {
			break
		}
		last = k
	}
	if last == 0 {
		return 0, false, nil
	}
	path := filepath.Join(l.cfg.CheckpointDir, mlpCheckpointName(last))
	c, err := ReadMLPCheckpoint(path)
	if err != nil {
		return 0, false, err
	}
	want, _ := json.Marshal(l.cfg)
	got, _ := json.Marshal(c.Config)
	switch {
	case string(want) != string(got):
		return 0, false, fmt.Errorf("%w: checkpoint %s was written with another configuration (%s), this run's is %s", ErrInput, path, got, want)
	case c.DemosSHA256 != l.digest:
		return 0, false, fmt.Errorf("%w: checkpoint %s was written for other demonstrations (SHA-256 %s, these %s)", ErrInput, path, c.DemosSHA256, l.digest)
	case c.Iteration != last || len(c.History) != last:
		return 0, false, fmt.Errorf("%w: checkpoint %s holds iteration %d with %d history entries, want %d", ErrInput, path, c.Iteration, len(c.History), last)
	}
	n := l.net.NumWeights()
	if len(c.Weights) != n || len(c.PolicyWeights) != n || len(c.AdamM1) != n || len(c.AdamM2) != n {
		return 0, false, fmt.Errorf("%w: checkpoint %s: weights or optimizer state of the wrong length for %d weights", ErrInput, path, n)
	}
	pol, err := ppo.FromCheckpoint(c.Policy)
	if err != nil {
		return 0, false, fmt.Errorf("%w: checkpoint %s: policy: %w", ErrInput, path, err)
	}
	if err := l.net.SetWeights(c.Weights); err != nil {
		return 0, false, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	l.prev = slices.Clone(c.PolicyWeights)
	l.opt.t, l.opt.m1, l.opt.m2 = c.AdamStep, slices.Clone(c.AdamM1), slices.Clone(c.AdamM2)
	l.pol = pol
	l.res.History = c.History[:last-1]
	it := c.History[last-1]
	gap, se := it.Gap, it.GapSE
	if it.ConfirmSE > 0 {
		gap, se = it.ConfirmGap, it.ConfirmSE
	}
	l.res.EnvSteps, l.res.EvalSteps = it.EnvSteps, it.EvalSteps
	l.record(it, gap, se, c.Converged)
	if l.res.StopReason != c.StopReason && c.Converged {
		return 0, false, fmt.Errorf("%w: checkpoint %s: stop reason %q does not follow from its history", ErrInput, path, c.StopReason)
	}
	return last, c.Converged || last == l.cfg.MaxIter, nil
}

// ReadMLPCheckpoint reads a checkpoint file written by LearnMLP.
func ReadMLPCheckpoint(path string) (*MLPCheckpoint, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("sampleirl: reading checkpoint: %w", err)
	}
	var c MLPCheckpoint
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("%w: checkpoint %s: %w", ErrInput, path, err)
	}
	if c.Policy == nil {
		return nil, fmt.Errorf("%w: checkpoint %s has no policy", ErrInput, path)
	}
	return &c, nil
}
