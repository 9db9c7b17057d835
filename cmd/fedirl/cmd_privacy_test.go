package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fedirl/fedirl/pkg/privacy"
)

// runFresh runs a freshly built command (no flag state left from another
// test) with args and returns its stdout and error.
func runFresh(cmd interface {
	SetArgs([]string)
	SetOut(io.Writer)
	SetErr(io.Writer)
	Execute() error
}, args ...string) (string, error) {
	var out bytes.Buffer
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(io.Discard)
	err := cmd.Execute()
	return out.String(), err
}

// TestPrivacySigmaCommand: the printed σ parses back to the library's
// float64 bits, with the accounting used.
func TestPrivacySigmaCommand(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		rounds int
		conv   privacy.Conversion
	}{
		{[]string{"--epsilon", "1", "--delta", "1e-5"}, 1, privacy.ConversionAnalytic},
		{[]string{"--epsilon", "0.5", "--delta", "1e-9", "--rounds", "7"}, 7, privacy.ConversionAnalytic},
		{[]string{"--epsilon", "8", "--delta", "1e-3", "--rounds", "3", "--conversion", "zcdp", "--clip", "0.25"}, 3, privacy.ConversionZCDP},
	} {
		out, err := runFresh(newPrivacyCmd(), append([]string{"sigma"}, tc.args...)...)
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		var got struct {
			Sigma      float64            `json:"sigma"`
			PerClip    float64            `json:"noise_multiplier_per_clip"`
			Accounting privacy.Accounting `json:"accounting"`
			NoiseStd   *float64           `json:"noise_std"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%v: output %q: %v", tc.args, out, err)
		}
		var eps, delta float64
		json.Unmarshal([]byte(tc.args[1]), &eps)
		json.Unmarshal([]byte(tc.args[3]), &delta)
		want, acc, _ := privacy.Calibrate(eps, delta, tc.rounds, tc.conv)
		if got.PerClip != 2*want {
			t.Errorf("%v: noise_multiplier_per_clip %v, want 2σ = %v (Opacus' convention: noise std per unit of C)", tc.args, got.PerClip, 2*want)
		}
		if got.Sigma != want || got.Accounting.Rounds != tc.rounds || got.Accounting.Conversion != tc.conv || got.Accounting.Rho != acc.Rho {
			t.Errorf("%v: printed %+v, want σ = %v (bit for bit) and accounting %+v", tc.args, got, want, acc)
		}
		if tc.conv == privacy.ConversionZCDP && (got.NoiseStd == nil || *got.NoiseStd != want*2*0.25) {
			t.Errorf("%v: noise_std %v, want σ·2C = %v", tc.args, got.NoiseStd, want*0.5)
		}
		if !strings.Contains(out, "Balle & Wang") && tc.conv == privacy.ConversionAnalytic {
			t.Errorf("%v: the formula is HTML-escaped or missing: %s", tc.args, out)
		}
	}
}

// TestPrivacyFlagsRefused is acceptance 4: bad (ε, δ, C, rounds) are refused
// with an error naming the flag, by "privacy sigma" and by "client".
func TestPrivacyFlagsRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		flag string
	}{
		{[]string{"--epsilon", "0", "--delta", "1e-5"}, "--epsilon"},
		{[]string{"--epsilon", "-1", "--delta", "1e-5"}, "--epsilon"},
		{[]string{"--epsilon", "NaN", "--delta", "1e-5"}, "--epsilon"},
		{[]string{"--epsilon", "Inf", "--delta", "1e-5"}, "--epsilon"},
		{[]string{"--epsilon", "1", "--delta", "0"}, "--delta"},
		{[]string{"--epsilon", "1", "--delta", "1"}, "--delta"},
		{[]string{"--epsilon", "1", "--delta", "NaN"}, "--delta"},
		{[]string{"--epsilon", "1", "--delta", "1e-5", "--rounds", "0"}, "--rounds"},
		{[]string{"--epsilon", "1", "--delta", "1e-5", "--clip", "0"}, "--clip"},
		{[]string{"--epsilon", "1", "--delta", "1e-5", "--clip", "-Inf"}, "--clip"},
		{[]string{"--epsilon", "1", "--delta", "1e-5", "--conversion", "rdp"}, "--conversion"},
	} {
		_, err := runFresh(newPrivacyCmd(), append([]string{"sigma"}, tc.args...)...)
		if err == nil || !strings.HasPrefix(err.Error(), tc.flag+" ") {
			t.Errorf("privacy sigma %v: error %v, want one starting with %s", tc.args, err, tc.flag)
		}
	}
	base := []string{"--task", "t", "--id", "c", "--mdp", "m.json", "--demos", "d.jsonl"}
	for _, tc := range []struct {
		args []string
		flag string
	}{
		{[]string{"--dp-epsilon", "0", "--dp-delta", "1e-5", "--dp-clip", "1"}, "--dp-epsilon"},
		{[]string{"--dp-epsilon", "Inf", "--dp-delta", "1e-5", "--dp-clip", "1"}, "--dp-epsilon"},
		{[]string{"--dp-epsilon", "1", "--dp-delta", "2", "--dp-clip", "1"}, "--dp-delta"},
		{[]string{"--dp-epsilon", "1", "--dp-delta", "1e-5", "--dp-clip", "0"}, "--dp-clip"},
		{[]string{"--dp-epsilon", "1", "--dp-delta", "1e-5", "--dp-clip", "NaN"}, "--dp-clip"},
		{[]string{"--dp-epsilon", "1", "--dp-delta", "1e-5"}, "--dp-ledger"},
		{[]string{"--dp-epsilon", "1", "--dp-clip", "1"}, "--dp-delta"},
		{[]string{"--dp-clip", "1"}, "--dp-epsilon"},
	} {
		_, err := runFresh(newClientCmd(), append(base, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.flag) {
			t.Errorf("client %v: error %v, want one naming %s", tc.args, err, tc.flag)
		}
	}
}

// TestClientLedgerFlags: a private client needs --dp-ledger; the budget
// flags go together and are checked; ledger and budget flags without
// privacy are refused. Each error names the flag.
func TestClientLedgerFlags(t *testing.T) {
	base := []string{"--task", "t", "--id", "c", "--mdp", "m.json", "--demos", "d.jsonl"}
	dp := []string{"--dp-epsilon", "1", "--dp-delta", "1e-5", "--dp-clip", "1"}
	ledger := []string{"--dp-ledger", filepath.Join(t.TempDir(), "l.db")}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{dp, "--dp-ledger"},
		{ledger, "--dp-ledger needs --dp-epsilon"},
		{[]string{"--dp-budget", "3"}, "--dp-budget needs --dp-epsilon"},
		{append(append(slices.Clone(dp), ledger...), "--dp-budget", "3"), "--dp-budget and --dp-budget-delta"},
		{append(append(slices.Clone(dp), ledger...), "--dp-budget", "0", "--dp-budget-delta", "1e-5"), "--dp-budget 0"},
		{append(append(slices.Clone(dp), ledger...), "--dp-budget", "3", "--dp-budget-delta", "1"), "--dp-budget-delta 1"},
	} {
		_, err := runFresh(newClientCmd(), append(slices.Clone(base), tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("client %v: error %v, want one containing %q", tc.args, err, tc.want)
		}
	}
}

// TestPrivacyLedgerCommand is acceptance 2's printout: after several tasks
// "fedirl privacy ledger" prints every task and the total the library
// composes, as a table and as JSON; a missing ledger is an error naming
// the flag.
func TestPrivacyLedgerCommand(t *testing.T) {
	path := filepath.Join(t.TempDir(), "alice.db")
	l, err := privacy.OpenLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	for i, task := range []string{"grid5", "pendulum", "lattice-7"} {
		m, _ := privacy.New(privacy.Params{Epsilon: float64(i + 1), Delta: 1e-5, Clip: 0.05, Rounds: 2})
		d := m.Declaration()
		if err := l.Begin(privacy.LedgerTask{Task: task, Client: "alice", Fingerprint: task, Declaration: d}, nil); err != nil {
			t.Fatal(err)
		}
		for r := 1; r <= 2-i%2; r++ {
			if err := l.Record(privacy.Release{Task: task, Client: "alice", Round: r, Mechanism: privacy.MechanismGaussian, Declaration: d, Theta: []float64{0.1}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	want, err := l.Summary(0)
	if err != nil {
		t.Fatal(err)
	}
	out, err := runFresh(newPrivacyCmd(), "ledger", "--ledger", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"grid5", "pendulum", "lattice-7", "2 of 2", "1 of 2", "5 releases",
		fmt.Sprintf("ε = %.4g at δ = %.3g (exact composition)", want.Epsilon, want.Delta)} {
		if !strings.Contains(out, s) {
			t.Errorf("printout lacks %q:\n%s", s, out)
		}
	}
	out, err = runFresh(newPrivacyCmd(), "ledger", "--ledger", path, "--json", "--delta", "1e-3")
	if err != nil {
		t.Fatal(err)
	}
	var got privacy.LedgerSummary
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	at, _ := l.Summary(1e-3)
	if got.Epsilon != at.Epsilon || got.Delta != 1e-3 || len(got.Tasks) != 3 || got.Releases != 5 {
		t.Errorf("JSON %+v, want %+v", got, at)
	}
	if _, err := runFresh(newPrivacyCmd(), "ledger", "--ledger", path+".missing"); err == nil || !strings.Contains(err.Error(), "--ledger") {
		t.Errorf("missing ledger: %v", err)
	}
	if _, err := runFresh(newPrivacyCmd(), "ledger", "--ledger", path, "--delta", "0"); err == nil || !strings.Contains(err.Error(), "--delta 0") {
		t.Errorf("--delta 0: %v", err)
	}
}

// TestPrivacySigmaHelpStatesConvention: the help says what σ multiplies and
// gives the Opacus / TF Privacy equivalent.
func TestPrivacySigmaHelpStatesConvention(t *testing.T) {
	out, err := runFresh(newPrivacyCmd(), "sigma", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"Δ = 2C", "σ·2C", "Opacus", "z = 2σ", "noise_multiplier_per_clip"} {
		if !strings.Contains(out, s) {
			t.Errorf("privacy sigma --help does not say %q", s)
		}
	}
}
