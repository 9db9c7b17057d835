package control

import (
	"context"
	"io"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/fedirl/fedirl/pkg/tasks"
)

// microProbe returns a study of microConfig and its probe of env's paper lattice.
func microProbe(t *testing.T, env string) (*Study, tasks.ControlProbe) {
	t.Helper()
	s, err := New(microConfig(), t.TempDir(), 1, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.probe(env, "paper")
	if err != nil {
		t.Fatal(err)
	}
	return s, p
}

// TestSharedModelBuiltOnce: two units of one client share one sampled
// model (the same transition storage, built once), each gets its own MDP
// header to set a horizon on, and another client gets its own model.
func TestSharedModelBuiltOnce(t *testing.T) {
	const env = "Pendulum-v1"
	s, p := microProbe(t, env)
	g, _, err := p.Features()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	pk := key(p)
	a, ra, err := s.model(ctx, pk, g, env, 0, s.modelConfig(env, 0, 1), 1)
	if err != nil {
		t.Fatal(err)
	}
	a.Horizon = 7
	b, rb, err := s.model(ctx, pk, g, env, 0, s.modelConfig(env, 0, 1), 1)
	if err != nil {
		t.Fatal(err)
	}
	if &a.Next[0] != &b.Next[0] || &ra[0] != &rb[0] {
		t.Fatal("the second request rebuilt the model")
	}
	if b.Horizon != 0 {
		t.Fatalf("the first holder's horizon leaked into the second: %d", b.Horizon)
	}
	c, _, err := s.model(ctx, pk, g, env, 1, s.modelConfig(env, 1, 1), 1)
	if err != nil {
		t.Fatal(err)
	}
	if &c.Next[0] == &a.Next[0] {
		t.Fatal("client 1 got client 0's model")
	}
	ref, rref, err := trueModel(ctx, g, env, 0, s.modelConfig(env, 0, 1), 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(ref.Next) != len(b.Next) || len(rref) != len(rb) {
		t.Fatal("the shared model differs from a fresh build")
	}
	for i := range ref.Next {
		if ref.Next[i] != b.Next[i] || ref.Prob[i] != b.Prob[i] {
			t.Fatalf("transition %d differs from a fresh build", i)
		}
	}
	for k := range rref {
		if rref[k] != rb[k] {
			t.Fatalf("true reward of pair %d differs from a fresh build", k)
		}
	}
}

// TestSharedFeaturesBuiltOnce: units of one probe share one lattice and Φ,
// equal entry for entry to a fresh build, and another environment's probe
// gets its own.
func TestSharedFeaturesBuiltOnce(t *testing.T) {
	const env = "Pendulum-v1"
	s, p := microProbe(t, env)
	g1, phi1, err := s.features(p)
	if err != nil {
		t.Fatal(err)
	}
	p2, err := s.probe(env, "paper") // a second unit's probe: equal, not the same value
	if err != nil {
		t.Fatal(err)
	}
	g2, phi2, err := s.features(p2)
	if err != nil {
		t.Fatal(err)
	}
	if g1 != g2 || phi1 != phi2 {
		t.Fatal("the second unit rebuilt the lattice or Φ")
	}
	gRef, phiRef, err := p.Features()
	if err != nil {
		t.Fatal(err)
	}
	if !mat.Equal(phiRef, phi1) || gRef.NumPairs() != g1.NumPairs() {
		t.Fatal("the shared Φ differs from a fresh build")
	}
	pc, err := s.probe("CartPole-v1", "paper")
	if err != nil {
		t.Fatal(err)
	}
	_, phiC, err := s.features(pc)
	if err != nil {
		t.Fatal(err)
	}
	if phiC == phi1 {
		t.Fatal("CartPole got Pendulum's Φ")
	}
}
