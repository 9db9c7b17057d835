package gridworld

import (
	"fmt"
	"os"
	"path/filepath"

	"gopkg.in/yaml.v3"
)

// RunFiles lists the files WriteRun creates, in the order it writes them.
var RunFiles = []string{
	"config.yaml",
	"table1.md", "table1.csv", "table1.json",
	"table2.md", "table2.csv", "table2.json",
	"bounds.json",
	"figure2.png", "success.png", "theta.png",
}

// BoundsSummary is bounds.json: one entry per Table-1 cell.
type BoundsSummary struct {
	GridSize int           `json:"grid_size"`
	Seed     uint64        `json:"seed"`
	Report   *BoundsReport `json:"bounds"`
}

// WriteRun writes the study's run folder: the resolved config, both tables as
// Markdown, CSV and JSON, the bounds, Figure 2 and the success-rate plot.
// Nothing written depends on time or scheduling, so the same config gives
// the same bytes.
func (s *Study) WriteRun(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating run folder: %w", err)
	}
	cfg, err := yaml.Marshal(s.Config)
	if err != nil {
		return fmt.Errorf("encoding config: %w", err)
	}
	var bounds []BoundsSummary
	for _, cells := range s.Cells {
		for _, f := range cells {
			if f.Bounds == nil {
				continue
			}
			bounds = append(bounds, BoundsSummary{f.GridSize, f.Seed, f.Bounds})
		}
	}
	fig2, err := s.Figure2PNG(s.figureGridSize())
	if err != nil {
		return err
	}
	succ, err := s.SuccessPNG()
	if err != nil {
		return err
	}
	theta, err := s.ThetaPNG()
	if err != nil {
		return err
	}
	files := map[string][]byte{
		"config.yaml": append([]byte("# Resolved fedirl grid-world study config (rerun with --config this-file).\n"), cfg...),
		"table1.md":   s.Table1Markdown(), "table1.csv": s.Table1CSV(), "table1.json": s.Table1JSON(),
		"table2.md": s.Table2Markdown(), "table2.csv": s.Table2CSV(), "table2.json": s.Table2JSON(),
		"bounds.json": marshal(bounds),
		"figure2.png": fig2, "success.png": succ, "theta.png": theta,
	}
	for _, name := range RunFiles {
		if err := os.WriteFile(filepath.Join(dir, name), files[name], 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
	return nil
}
