package tasks

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/fedirl/fedirl/pkg/federation"
	"github.com/fedirl/fedirl/pkg/fusion"
)

// staticLearner returns a fixed θ.
type staticLearner []float64

func (l staticLearner) Learn(context.Context, federation.TaskSpec, []float64) (federation.LocalResult, error) {
	return federation.LocalResult{Theta: l, DemoCount: 20, Converged: true}, nil
}

// TestStealthyAttackerWarnedThroughTheCoordinator: the ten honest θ of the
// turn-5 measurements (grid world 10×10, seed 1, fedirl irl --iters 50
// --l2 1e-3) and one attacker sending the reversed honest mean (norm 0.053,
// honest scale), fused by reward-median with per-client σ (the method it
// moved to EPIC 0.48) through federation.RunInProcess with this Fuser: the
// fused result, as every client receives it, warns of m0 alone, its outlier
// score above fusion.OutlierThreshold and every honest client's below.
func TestStealthyAttackerWarnedThroughTheCoordinator(t *testing.T) {
	honest := [][]float64{
		{-0.02161515532641288, 0.02670706747422706}, {-0.032555189767388436, 0.03279818036292931},
		{-0.06164278186978441, 0.034783273683226534}, {-0.11315912205204802, 0.05501264091836369},
		{-0.013436711261998104, 0.012657525246715996}, {-0.006648207509341135, 0.0034908908578988435},
		{-0.06492601503328745, 0.023075456123055484}, {-0.013663517412845905, 0.006676246271187404},
		{-0.058010648489033284, 0.03434493724858192}, {-0.07755443468459222, 0.02975828544710664},
	}
	var clients []federation.LocalClient
	rev := make([]float64, 2)
	for i, th := range honest {
		clients = append(clients, federation.LocalClient{ID: fmt.Sprintf("c%d", i), Learner: staticLearner(th)})
		rev[0] -= th[0] / float64(len(honest))
		rev[1] -= th[1] / float64(len(honest))
	}
	clients = append(clients, federation.LocalClient{ID: "m0", Learner: staticLearner(rev)})
	probe, dim, err := GridWorldProbe(10, 1, federation.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	spec := federation.TaskSpec{ID: "stealthy", EnvFamily: "gridworld", Probe: probe, ThetaDim: dim, Quorum: 11, MinClients: 11, Rounds: 1}
	if spec.Fusion, err = EncodeFusion(fusion.Options{Method: fusion.MethodRewardMedian, SigmaMode: fusion.SigmaPerClient}); err != nil {
		t.Fatal(err)
	}
	fused, reps, err := federation.RunInProcess(context.Background(), spec, clients, federation.InProcessConfig{Fuser: NewFuser()})
	if err != nil {
		t.Fatal(err)
	}
	r := fused[0]
	for i, s := range r.OutlierScores {
		if attacker := r.Clients[i] == "m0"; attacker != (s > fusion.OutlierThreshold) {
			t.Errorf("client %s: outlier score %.3g (threshold %g)", r.Clients[i], s, fusion.OutlierThreshold)
		}
	}
	if !strings.Contains(r.Warning, "for client m0 (") || strings.Contains(r.Warning, "c1") {
		t.Errorf("warning %q, want m0 alone named", r.Warning)
	}
	for _, rep := range reps {
		if rep.Final.Warning != r.Warning {
			t.Errorf("client %s received warning %q", rep.ClientID, rep.Final.Warning)
		}
	}
}
