package federation

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// verdictLearner returns a fixed θ with a given convergence verdict.
type verdictLearner struct {
	converged bool
	reason    string
}

func (l verdictLearner) Learn(context.Context, TaskSpec, []float64) (LocalResult, error) {
	return LocalResult{Theta: []float64{1}, DemoCount: 3, Iterations: 25, GradNorm: 0.25, Converged: l.converged, StopReason: l.reason}, nil
}

// TestClientSaysWhetherTheFitConverged: the client's log and report carry the
// local fit's verdict; an unconverged fit is a warning naming why it stopped.
func TestClientSaysWhetherTheFitConverged(t *testing.T) {
	for _, tc := range []struct {
		l    verdictLearner
		want string
	}{
		{verdictLearner{true, ""}, "grad norm 0.25, converged)"},
		{verdictLearner{false, "iteration budget 25 spent"}, "grad norm 0.25); warning: local fit not converged: iteration budget 25 spent"},
		{verdictLearner{false, ""}, "grad norm 0.25); warning: local fit not converged: the learner gave no reason"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		f := newFixture(t, CoordinatorConfig{})
		tok := f.create(t, testSpec("t1", 1, 1), "a")
		var mu sync.Mutex
		var log []string
		logf := func(format string, args ...any) {
			mu.Lock()
			defer mu.Unlock()
			log = append(log, fmt.Sprintf(format, args...))
		}
		rep, err := RunClient(ctx, InProcess{C: f.coord, Cred: Credentials{Token: tok["a"]}}, tc.l, ClientConfig{TaskID: "t1", ClientID: "a", Logf: logf})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Rounds) != 1 || rep.Rounds[0].Local.Converged != tc.l.converged || rep.Rounds[0].Local.StopReason != tc.l.reason {
			t.Errorf("%+v: report rounds %+v, want the learner's verdict", tc.l, rep.Rounds)
		}
		if all := strings.Join(log, "\n"); !strings.Contains(all, "round 1: learned theta (3 demos, 25 iterations, "+tc.want) {
			t.Errorf("%+v: log\n%s\nwant %q", tc.l, all, tc.want)
		}
	}
}
