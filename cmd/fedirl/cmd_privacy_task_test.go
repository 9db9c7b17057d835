package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/fedirl/fedirl/pkg/federation"
	"github.com/fedirl/fedirl/pkg/privacy"
)

// TestTaskCreateSetsClip: a private task must set the clipping norm
// (--dp-clip) or let clients choose it (--dp-client-clip), not both; the
// stored requirement carries the task's C.
func TestTaskCreateSetsClip(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "fed.db")
	base := []string{"--store", store, "--gridworld-size", "5", "--clients", "a,b", "--dp-max-epsilon", "2", "--dp-max-delta", "1e-5", "--tokens-out", filepath.Join(dir, "tok.json")}
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "exactly one of --dp-clip"},
		{[]string{"--dp-clip", "0.05", "--dp-client-clip"}, "exactly one of --dp-clip"},
		{[]string{"--dp-clip", "0"}, "--dp-clip 0"},
		{[]string{"--dp-clip", "-Inf"}, "--dp-clip"},
	} {
		if err := execTaskCreate(t, "", append(append([]string{"--id", "x"}, base...), c.args...)...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error containing %q", c.args, err, c.want)
		}
	}
	if err := execTaskCreate(t, "", "--store", store, "--id", "y", "--gridworld-size", "5", "--clients", "a", "--dp-clip", "0.05", "--tokens-out", filepath.Join(dir, "t0.json")); err == nil || !strings.Contains(err.Error(), "--dp-max-epsilon") {
		t.Errorf("--dp-clip without a requirement: %v", err)
	}
	if err := execTaskCreate(t, "", append(append([]string{"--id", "c"}, base...), "--dp-clip", "0.05")...); err != nil {
		t.Fatal(err)
	}
	if err := execTaskCreate(t, "", append(append([]string{"--id", "free"}, base...), "--dp-client-clip")...); err != nil {
		t.Fatal(err)
	}
	s, err := federation.OpenStoreWith(store, federation.StoreOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for id, want := range map[string]privacy.Requirement{"c": {MaxEpsilon: 2, MaxDelta: 1e-5, Clip: 0.05}, "free": {MaxEpsilon: 2, MaxDelta: 1e-5, ClientClip: true}} {
		spec, err := s.Task(id)
		if err != nil {
			t.Fatal(err)
		}
		if spec.Privacy == nil || *spec.Privacy != want {
			t.Errorf("task %s: stored requirement %+v, want %+v", id, spec.Privacy, want)
		}
	}
}

// TestTaskCreateCentralPrivacy: the central-privacy flags go together, are
// checked, and are refused with a fusion that is not a weighted mean (the
// offline path runs the coordinator's check); a mean task stores them.
func TestTaskCreateCentralPrivacy(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "fed.db")
	central := []string{"--central-dp-epsilon", "1", "--central-dp-delta", "1e-5", "--central-dp-clip", "0.05"}
	base := []string{"--store", store, "--gridworld-size", "5", "--clients", "a,b", "--tokens-out", filepath.Join(dir, "tok.json")}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--central-dp-epsilon", "1"}, "go together"},
		{[]string{"--central-dp-epsilon", "1", "--central-dp-delta", "1e-5", "--central-dp-clip", "0"}, "--central-dp-clip 0"},
		{[]string{"--central-dp-epsilon", "-1", "--central-dp-delta", "1e-5", "--central-dp-clip", "1"}, "--central-dp-epsilon -1"},
		{append([]string{"--fusion", "barycentric"}, central...), "weighted mean"},
	} {
		if err := execTaskCreate(t, "", append(append([]string{"--id", "x"}, base...), c.args...)...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error containing %q", c.args, err, c.want)
		}
	}
	if err := execTaskCreate(t, "", append(append([]string{"--id", "m"}, base...), central...)...); err != nil {
		t.Fatal(err)
	}
	s, err := federation.OpenStoreWith(store, federation.StoreOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	spec, err := s.Task("m")
	if err != nil {
		t.Fatal(err)
	}
	if want := (privacy.Central{Epsilon: 1, Delta: 1e-5, Clip: 0.05}); spec.CentralPrivacy == nil || *spec.CentralPrivacy != want {
		t.Errorf("stored central privacy %+v, want %+v", spec.CentralPrivacy, want)
	}
}
