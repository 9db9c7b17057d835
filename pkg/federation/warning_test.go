package federation

import (
	"context"
	"strings"
	"testing"
)

// thresholdFuser is meanFuser with an outlier threshold, so the coordinator
// names the clients whose score (‖θ_i − θ̄‖₂) exceeds it.
type thresholdFuser struct {
	meanFuser
	threshold float64
}

func (f *thresholdFuser) Fuse(ctx context.Context, spec TaskSpec, thetas [][]float64, demos []int) (FuseOutput, error) {
	out, err := f.meanFuser.Fuse(ctx, spec, thetas, demos)
	out.OutlierThreshold = f.threshold
	return out, err
}

// TestFusedResultWarnsOfOutliers: with clients a, b, c at θ = 0, 0, 10 the
// mean is 10/3 and the scores 10/3, 10/3, 20/3; a threshold of 5 names c
// alone, with its score, in the fused result every client receives; 3 names
// all three; no threshold (0) gives no warning.
func TestFusedResultWarnsOfOutliers(t *testing.T) {
	for _, c := range []struct {
		threshold float64
		want      []string
		not       []string
	}{
		{5, []string{"outlier score above 5 for client c (6.67)", "dominated by this client"}, []string{"client a", "(3.33)"}},
		{3, []string{"outlier scores above 3 for 3 clients", "a (3.33)", "b (3.33)", "c (6.67)"}, nil},
		{0, nil, nil},
	} {
		clients := []LocalClient{{ID: "a", Learner: fixedLearner{Delta: []float64{0}}},
			{ID: "b", Learner: fixedLearner{Delta: []float64{0}}}, {ID: "c", Learner: fixedLearner{Delta: []float64{10}}}}
		fused, reps, err := RunInProcess(context.Background(), testSpec("w", 1, 3), clients, InProcessConfig{Fuser: &thresholdFuser{threshold: c.threshold}})
		if err != nil {
			t.Fatal(err)
		}
		w := fused[0].Warning
		if c.want == nil && w != "" {
			t.Errorf("threshold %v: warning %q, want none", c.threshold, w)
		}
		for _, s := range c.want {
			if !strings.Contains(w, s) {
				t.Errorf("threshold %v: warning %q lacks %q", c.threshold, w, s)
			}
		}
		for _, s := range c.not {
			if strings.Contains(w, s) {
				t.Errorf("threshold %v: warning %q names %q", c.threshold, w, s)
			}
		}
		for i, r := range reps {
			if r.Final.Warning != w {
				t.Errorf("threshold %v: client %d received warning %q, the result has %q", c.threshold, i, r.Final.Warning, w)
			}
		}
	}
}
