package control

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"testing"

	"github.com/fedirl/fedirl/pkg/approx"
	"github.com/fedirl/fedirl/pkg/irl"
)

// TestFidelityCoverages runs the micro study and checks every fidelity
// unit: each scored method carries EPIC under the three coverages by name
// (a number or null, never missing); the demonstrations coverage is the
// model-transition EPIC under the state visits of the client's
// demonstrations, counted here from the demos file snapped to the lattice
// (held-out clients included); and the summary's EPIC to the true reward is
// still the model coverage's, averaged over the clients.
func TestFidelityCoverages(t *testing.T) {
	cfg := microConfig()
	dir := t.TempDir()
	st := runStudy(t, cfg, dir, 2, Shard{})
	sum, err := st.WriteOutputs()
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, env := range cfg.Envs {
		for _, l := range cfg.Lattices[env] {
			seed := cfg.Seed
			modelSum := map[string]float64{} // training clients' model-coverage EPIC per method
			for c := range cfg.NumberOfClients + cfg.HeldOutClients {
				u, sp, _, err := st.fidelityUnit(env, l, c, seed)
				if err != nil {
					t.Fatal(err)
				}
				var f FidelityFile
				b, err := os.ReadFile(u.path(st.units))
				if err != nil {
					t.Fatal(err)
				}
				if err := json.Unmarshal(b, &f); err != nil {
					t.Fatal(err)
				}
				methods := st.fidelityMethods(c)
				if len(f.EPIC) != len(methods) {
					t.Fatalf("%s client %d: EPIC for %d methods, want %d (%v)", env, c, len(f.EPIC), len(methods), methods)
				}
				// Count the demonstrations' visits independently of irl.StateVisits.
				du, _, _, _, err := st.demosUnit(env, c, seed)
				if err != nil {
					t.Fatal(err)
				}
				d, err := ReadDemos(du.path(st.units))
				if err != nil {
					t.Fatal(err)
				}
				if f.DemoSteps != len(d.Acts) {
					t.Errorf("%s client %d: demo_steps %d, the demos file has %d actions", env, c, f.DemoSteps, len(d.Acts))
				}
				g, phi, err := sp.Probe.Features()
				if err != nil {
					t.Fatal(err)
				}
				m, rTrue, err := trueModel(context.Background(), g, env, c, sp.Model, 2)
				if err != nil {
					t.Fatal(err)
				}
				visits := make([]float64, m.NumStates)
				at := 0
				for _, n := range d.Lengths {
					for k := range n {
						visits[g.SnapState(d.States[at+k])]++
					}
					at += n + 1
				}
				for _, meth := range methods {
					byCov, ok := f.EPIC[meth]
					if !ok {
						t.Fatalf("%s client %d: no EPIC for %s", env, c, meth)
					}
					for _, cov := range irl.Coverages() {
						if _, ok := byCov[cov]; !ok {
							t.Errorf("%s client %d %s: coverage %s missing (want a number or null)", env, c, meth, cov)
						}
					}
					if byCov[irl.CoverageModel] != nil && !st.heldOut(c) {
						modelSum[meth] += *byCov[irl.CoverageModel]
					}
					if byCov[irl.CoverageDemonstrations] == nil {
						continue
					}
					ru, err := st.rewardUnit(evalJob{env, l, meth, seed, c})
					if err != nil {
						t.Fatal(err)
					}
					theta, err := st.readTheta(ru, meth, c) // a personalized θ is the client's entry of the pooled unit
					if err != nil {
						t.Fatal(err)
					}
					r := make([]float64, m.NumPairs())
					for k := range r {
						for j, v := range theta {
							r[k] += phi.At(k, j) * v
						}
					}
					want, err := irl.EPIC(m, r, rTrue, irl.EPICOptions{StateWeights: visits})
					if err != nil {
						t.Fatal(err)
					}
					approx.Equal(t, env+" "+meth+" demonstrations EPIC", *byCov[irl.CoverageDemonstrations], want.Distance, 1e-9, 0)
					checked++
				}
			}
			for _, r := range sum.Rows {
				if r.Env != env || r.Lattice != l || r.Group != group(false) || r.EPICToTrue == nil {
					continue
				}
				if !slices.Contains(st.fidelityMethods(0), r.Method) {
					t.Fatalf("%s: summary row %s has EPIC but is not scored", env, r.Method)
				}
				approx.Equal(t, env+" "+r.Method+" summary EPIC (model coverage)", r.PerSeedEPIC[string(irl.CoverageModel)][0], modelSum[r.Method]/float64(cfg.NumberOfClients), 1e-12, 0)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no demonstrations-coverage EPIC was defined, nothing checked")
	}
}
