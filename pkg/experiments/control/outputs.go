package control

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/fedirl/fedirl/pkg/experiments/report"
)

// WriteOutputs assembles the outputs from the unit files alone:
// config.yaml, curves.csv, summary.{md,csv,json}, irl_diagnostics.csv
// (sample_irl_diagnostics.csv beside it for sample-based fits),
// figure3.png, figure5.png, resolution.png and, with clips enabled, clips/
// (ClipsConfig). It fails, listing them, if evaluation units are missing.
func (s *Study) WriteOutputs() (*Summary, error) {
	missing, err := s.Missing()
	if err != nil {
		return nil, err
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%d evaluation units are missing (run the remaining shards, or without --shard), e.g. %s", len(missing), strings.Join(missing[:min(3, len(missing))], ", "))
	}
	if err := s.WriteConfig(); err != nil {
		return nil, err
	}
	var evals []EvalFile
	for _, j := range s.evalJobs() {
		u, _, _ := s.evalUnit(j)
		var f EvalFile
		if err := readJSON(u.path(s.units), &f); err != nil {
			return nil, err
		}
		// An evaluation does not depend on whether its client is held out
		// (its unit is shared by studies with other client splits): the
		// group is this study's.
		f.HeldOut = s.heldOut(f.Client)
		evals = append(evals, f)
	}
	if err := s.writeCurves(evals); err != nil {
		return nil, err
	}
	sum, err := s.summarize(evals)
	if err != nil {
		return nil, err
	}
	if err := report.WriteJSON(filepath.Join(s.dir, "summary.json"), sum); err != nil {
		return nil, err
	}
	if err := report.WriteFile(filepath.Join(s.dir, "summary.md"), []byte(sum.Markdown())); err != nil {
		return nil, err
	}
	if err := report.WriteFile(filepath.Join(s.dir, "summary.csv"), sum.CSV()); err != nil {
		return nil, err
	}
	lat, smp := splitIRL(sum.IRL)
	if err := report.WriteFile(filepath.Join(s.dir, "irl_diagnostics.csv"), irlCSV(lat)); err != nil {
		return nil, err
	}
	if len(smp) > 0 {
		if err := report.WriteFile(filepath.Join(s.dir, "sample_irl_diagnostics.csv"), sampleIRLCSV(smp)); err != nil {
			return nil, err
		}
	}
	if err := s.figures(evals, sum); err != nil {
		return nil, err
	}
	if err := s.writeClips(); err != nil {
		return nil, err
	}
	return sum, nil
}

// WriteConfig writes the resolved config to config.yaml (a shard's can be
// passed to merge with --config).
func (s *Study) WriteConfig() error {
	y, err := s.cfg.YAML()
	if err != nil {
		return err
	}
	return report.WriteFile(filepath.Join(s.dir, "config.yaml"), y)
}

func (s *Study) writeCurves(evals []EvalFile) error {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.Write([]string{"env", "lattice", "method", "seed", "client", "held_out", "step", "true_return", "train_true_return", "train_learned_return"})
	for _, f := range evals {
		for _, c := range f.Curve {
			w.Write([]string{f.Env, f.Lattice, f.Method, fmt.Sprint(f.Seed), fmt.Sprint(f.Client), fmt.Sprint(f.HeldOut),
				fmt.Sprint(c.Step), num(c.True), num(c.TrainTrue), num(c.TrainLearned)})
		}
	}
	w.Flush()
	return report.WriteFile(filepath.Join(s.dir, "curves.csv"), buf.Bytes())
}
