package control

import (
	"context"
	"encoding/json"
	"math"
	"net"
	"path/filepath"
	"testing"

	"github.com/fedirl/fedirl/pkg/federation"
	"github.com/fedirl/fedirl/pkg/fusion"
	"github.com/fedirl/fedirl/pkg/irl"
	"github.com/fedirl/fedirl/pkg/jointopt"
	"github.com/fedirl/fedirl/pkg/tasks"
)

// TestJointOverGRPCReachesPooled: on the micro study's control clients
// (each its own physics, lattice model and expert demonstrations), the
// joint task over a real gRPC server reaches the central pooled fit of the
// same objectives (irl.Pooled on objectives built independently) to a
// relative error ≤ 1e-8 in ≤ 15 rounds, and the study's joint fusion unit
// (the in-process transport) holds the same θ folded.
func TestJointOverGRPCReachesPooled(t *testing.T) {
	cfg := microConfig()
	cfg.Methods = []string{MethodLocal, fusion.MethodJoint, MethodPooled, MethodTrue}
	cfg.Joint.GradTol = 1e-10
	cfg.Joint.MaxRounds = 15
	dir := t.TempDir()
	st := runStudy(t, cfg, dir, 2, Shard{})
	ctx := context.Background()
	for _, env := range cfg.Envs {
		l := cfg.Lattices[env][0]
		seed := cfg.Seed
		clients, dim, bias, icfg, err := st.jointClients(ctx, env, l, seed)
		if err != nil {
			t.Fatal(err)
		}
		// the central pooled fit, on objectives built here
		var objs []*irl.Objective
		for _, c := range clients {
			jl := c.Learner.(*jointLearner)
			o, err := irl.NewObjective(jl.m, jl.phi, jl.demos, jl.cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer o.Close()
			objs = append(objs, o)
		}
		w := make([]float64, len(objs))
		for i := range w {
			w[i] = 1 / float64(len(w))
		}
		pooled, err := irl.Pooled(ctx, objs, w, nil, jointopt.Config{GradTol: 1e-10, MaxRounds: 50})
		if err != nil || !pooled.Converged() {
			t.Fatalf("%s: pooled %v %s", env, err, pooled.Reason)
		}
		// the joint task over gRPC
		store, err := federation.OpenStore(filepath.Join(t.TempDir(), "fed.db"))
		if err != nil {
			t.Fatal(err)
		}
		coord, err := federation.NewCoordinator(store, federation.CoordinatorConfig{Fuser: tasks.NewFuser(), AdminToken: "admin"})
		if err != nil {
			t.Fatal(err)
		}
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := federation.NewGRPCServer(coord, federation.GRPCServerConfig{})
		go srv.Serve(lis)
		defer func() { srv.Stop(); coord.Close(); store.Close() }()
		p, err := st.probe(env, l)
		if err != nil {
			t.Fatal(err)
		}
		probe, _ := json.Marshal(p)
		spec := federation.TaskSpec{ID: "joint-" + env, EnvFamily: tasks.Control{}.Name(), Probe: probe, ThetaDim: dim,
			Quorum: len(clients), MinClients: len(clients)}
		if spec.Fusion, err = tasks.EncodeFusion(fusion.Options{Method: fusion.MethodJoint, GradTol: 1e-10, MaxRounds: 15}); err != nil {
			t.Fatal(err)
		}
		icfg.EmpiricalFeatures = nil
		if spec.IRL, err = tasks.EncodeIRL(icfg); err != nil {
			t.Fatal(err)
		}
		ids := make([]string, len(clients))
		for i, c := range clients {
			ids[i] = c.ID
		}
		tokens, err := coord.CreateTask(spec, ids)
		if err != nil {
			t.Fatal(err)
		}
		reports := make([]federation.ClientReport, len(clients))
		errs := make(chan error, len(clients))
		for i, c := range clients {
			go func() {
				conn, err := federation.DialGRPC(lis.Addr().String(), federation.DialConfig{Token: tokens[c.ID]})
				if err != nil {
					errs <- err
					return
				}
				defer conn.Close()
				reports[i], err = federation.RunClient(ctx, conn, c.Learner, federation.ClientConfig{TaskID: spec.ID, ClientID: c.ID})
				errs <- err
			}()
		}
		for range clients {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		final := reports[0].Final
		if final.Joint == nil || final.Joint.Reason != jointopt.StopConverged || final.Joint.Rounds > 15 {
			t.Fatalf("%s: joint over gRPC ended %+v", env, final.Joint)
		}
		if e := relErr(final.Theta, pooled.Theta); !(e <= 1e-8) {
			t.Fatalf("%s: joint θ %v against pooled %v: relative error %.3g > 1e-8", env, final.Theta, pooled.Theta, e)
		}
		t.Logf("%s: %d rounds, relative error to pooled %.2g", env, final.Joint.Rounds, relErr(final.Theta, pooled.Theta))
		// the study's unit: the same fit through the in-process transport, folded
		fu, _, _, err := st.fusionUnit(env, l, fusion.MethodJoint, seed)
		if err != nil {
			t.Fatal(err)
		}
		var ff FusionFile
		if err := readJSON(fu.path(st.units), &ff); err != nil {
			t.Fatal(err)
		}
		if e := relErr(ff.Theta, fold(pooled.Theta, bias)); !(e <= 1e-8) {
			t.Fatalf("%s: the study's joint unit θ is %.3g from the pooled fit", env, e)
		}
	}
}

func relErr(got, want []float64) float64 {
	num, den := 0.0, 0.0
	for i := range want {
		num += (got[i] - want[i]) * (got[i] - want[i])
		den += want[i] * want[i]
	}
	return math.Sqrt(num / den)
}
