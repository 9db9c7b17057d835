package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fedirl/fedirl/pkg/envs/registry"
	"github.com/fedirl/fedirl/pkg/sampleirl"
)

// writeDemos runs "fedirl env episodes --demos-out" for client's physics
// and returns the file and the command's stdout.
func writeDemos(t *testing.T, dir string, client int, policy string, episodes int, seed uint64) (string, string) {
	t.Helper()
	file := filepath.Join(dir, fmt.Sprintf("demos-%d.jsonl", client))
	out, err := runFresh(newEnvEpisodesCmd(), "--env", "Pendulum-v1", "--client", fmt.Sprint(client), "--policy", policy,
		"--episodes", fmt.Sprint(episodes), "--seed", fmt.Sprint(seed), "--demos-out", file)
	if err != nil {
		t.Fatal(err)
	}
	return file, out
}

// TestEpisodesDemosOut: the demonstrations "fedirl env episodes
// --demos-out" writes read back with sampleirl.ReadTrajectoriesFile
// against the simulator's spaces, one per episode, and are the simulator's
// own episodes: replaying the recorded actions in a fresh copy of the
// client's simulator (reset with the same seeds) gives the recorded
// observations bit for bit, the printed returns and the recorded ends.
func TestEpisodesDemosOut(t *testing.T) {
	dir := t.TempDir()
	const client, seed = 3, 11
	file, out := writeDemos(t, dir, client, "random", 3, seed)
	e, err := registry.Make("Pendulum-v1", client, nil, seed)
	if err != nil {
		t.Fatal(err)
	}
	demos, err := sampleirl.ReadTrajectoriesFile(file, e.ObservationSpace(), e.ActionSpace())
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(demos) != 3 || len(lines) != 4 {
		t.Fatalf("%d demonstrations and %d stdout lines, want 3 and 3 + a summary", len(demos), len(lines))
	}
	for k, tr := range demos {
		var line episodeLine
		if err := json.Unmarshal([]byte(lines[k]), &line); err != nil {
			t.Fatal(err)
		}
		obs := e.Reset(seed + uint64(k))
		if !slices.Equal(obs, tr.Obs[0]) {
			t.Errorf("episode %d: reset observation %v, recorded %v", k, obs, tr.Obs[0])
		}
		ret := 0.0
		var term bool
		for i, a := range tr.Actions {
			o, r, te, _ := e.Step(a)
			ret, term = ret+r, te
			if !slices.Equal(o, tr.Obs[i+1]) {
				t.Fatalf("episode %d step %d: replay observation %v, recorded %v", k, i+1, o, tr.Obs[i+1])
			}
		}
		if len(tr.Actions) != line.Length || ret != line.Return || term != tr.Terminated || tr.Terminated != line.Terminated {
			t.Errorf("episode %d: %d actions, return %v, terminated %v; printed length %d, return %v, terminated %v", k, len(tr.Actions), ret, tr.Terminated, line.Length, line.Return, line.Terminated)
		}
	}
	if _, err := runFresh(newEnvEpisodesCmd(), "--env", "Pendulum-v1", "--demos-out", "-"); err == nil || !strings.Contains(err.Error(), "--demos-out -: stdout carries the episode lines") {
		t.Errorf("--demos-out -: %v", err)
	}
}
