package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fedirl/fedirl/pkg/approx"
)

// TestEnvRolloutReplaysGolden runs "fedirl env rollout" on the golden
// trajectories of pkg/envs/classic (made by its testdata/gymnasium_reference.py)
// and diffs the JSON Lines against them, as a user replaying a Gymnasium
// trajectory would.
func TestEnvRolloutReplaysGolden(t *testing.T) {
	b, err := os.ReadFile("../../pkg/envs/classic/testdata/gymnasium_golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var golden struct {
		Cases []struct {
			Name    string             `json:"name"`
			Env     string             `json:"env"`
			Params  map[string]float64 `json:"params"`
			State0  []float64          `json:"state0"`
			Actions []float64          `json:"actions"`
			Steps   []struct {
				Obs        []float64 `json:"obs"`
				Reward     float64   `json:"reward"`
				Terminated bool      `json:"terminated"`
				Truncated  bool      `json:"truncated"`
			} `json:"steps"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(b, &golden); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, c := range golden.Cases {
		if !strings.HasSuffix(c.Name, "_0") && !strings.Contains(c.Name, "client3") && !strings.Contains(c.Name, "x_bound") {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			n := min(len(c.Actions), 200)
			var acts strings.Builder
			for _, a := range c.Actions[:n] {
				fmt.Fprintf(&acts, "%v\n", a)
			}
			actFile := filepath.Join(dir, c.Name+".txt")
			if err := os.WriteFile(actFile, []byte(acts.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			var state []string
			for _, v := range c.State0 {
				state = append(state, fmt.Sprint(v))
			}
			out := filepath.Join(dir, c.Name+".jsonl")
			args := []string{"--env", c.Env, "--state", strings.Join(state, ","), "--actions", actFile, "--out", out}
			for k, v := range c.Params {
				args = append(args, "--param", fmt.Sprintf("%s=%v", k, v))
			}
			cmd := newEnvRolloutCmd() // fresh flags for each case
			cmd.SetArgs(args)
			if err := cmd.Execute(); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(out)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			sc := bufio.NewScanner(f)
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			lines := 0
			for sc.Scan() {
				var rec envRolloutStep
				if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
					t.Fatalf("line %d: %v", lines+1, err)
				}
				if rec.Step != lines {
					t.Fatalf("line %d has step %d", lines+1, rec.Step)
				}
				if rec.Step > 0 {
					want := c.Steps[rec.Step-1]
					approx.Slices(t, fmt.Sprintf("step %d obs", rec.Step), rec.Obs, want.Obs, 1e-9, 0)
					approx.Equal(t, fmt.Sprintf("step %d reward", rec.Step), *rec.Reward, want.Reward, 1e-9, 0)
					if rec.Terminated != want.Terminated || rec.Truncated != want.Truncated {
						t.Fatalf("step %d flags %v/%v, want %v/%v", rec.Step, rec.Terminated, rec.Truncated, want.Terminated, want.Truncated)
					}
				}
				lines++
			}
			if lines != n+1 {
				t.Errorf("%d lines, want %d", lines, n+1)
			}
		})
	}
}

// FuzzParseActionText checks that the actions-file parser never panics and
// that whatever it accepts has the requested dimension.
func FuzzParseActionText(f *testing.F) {
	for _, s := range []string{"1\n0\n1\n", "[0, 1, 2]", "[[1.5], [-2]]", "# c\n1, 2\n3 4\n", "[", "1e400\n", "nan\n"} {
		f.Add(s, 1)
		f.Add(s, 2)
	}
	f.Fuzz(func(t *testing.T, text string, dim int) {
		if dim < 1 || dim > 8 {
			return
		}
		acts, err := parseActionText(text, dim)
		if err != nil {
			return
		}
		for i, a := range acts {
			if len(a) != dim {
				t.Fatalf("action %d has %d values, want %d", i, len(a), dim)
			}
		}
	})
}

// FuzzParseEnvParams checks that the --param parser never panics.
func FuzzParseEnvParams(f *testing.F) {
	for _, s := range []string{"g=9.81", "g=1,m=2", "=", "g", "g=x", ",,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if p, err := parseEnvParams([]string{s}); err == nil && p == nil {
			t.Fatal("nil map without error")
		}
	})
}

// TestParseEnvActions covers inline lists, vectors, files and their errors.
func TestParseEnvActions(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "a.txt")
	if err := os.WriteFile(file, []byte("1\n# skip\n\n0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		arg     string
		dim     int
		want    int
		wantErr string
	}{
		{"0,1,1", 1, 3, ""},
		{"1.5;-2", 1, 2, ""},
		{"1,2;3,4", 2, 2, ""},
		{file, 1, 2, ""},
		{"1,x", 1, 0, `"x"`},
		{"1,2;3", 2, 0, "action 2 has 1 values"},
		{"", 1, 0, "empty"},
	}
	for _, tc := range tests {
		got, err := parseEnvActions(tc.arg, tc.dim)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: error %v, want containing %q", tc.arg, err, tc.wantErr)
			}
			continue
		}
		if err != nil || len(got) != tc.want {
			t.Errorf("%q: %d actions, err %v; want %d", tc.arg, len(got), err, tc.want)
		}
	}
}
