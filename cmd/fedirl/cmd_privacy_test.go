package main

import (
	"bytes"
	"encoding/json"
	"io"
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
		{[]string{"--dp-epsilon", "1", "--dp-delta", "1e-5"}, "--dp-clip"},
		{[]string{"--dp-clip", "1"}, "--dp-epsilon"},
	} {
		_, err := runFresh(newClientCmd(), append(base, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.flag) {
			t.Errorf("client %v: error %v, want one naming %s", tc.args, err, tc.flag)
		}
	}
}
