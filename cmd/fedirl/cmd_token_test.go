package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fedirl/fedirl/pkg/federation"
)

// TestTokenRevokeAndStoreCheckOffline: "server token rotate --store"
// writes a new token that authenticates while the old one is refused with
// the revocation; "server token revoke" leaves no token that works; and
// "server store check" names a record whose θ was edited in the file.
func TestTokenRevokeAndStoreCheckOffline(t *testing.T) {
	dir := t.TempDir()
	store, toks := filepath.Join(dir, "fed.db"), filepath.Join(dir, "tokens.json")
	if err := execTaskCreate(t, "", "--store", store, "--id", "t", "--gridworld-size", "3", "--clients", "alice,bob", "--tokens-out", toks); err != nil {
		t.Fatal(err)
	}
	var old map[string]string
	b, _ := os.ReadFile(toks)
	if err := json.Unmarshal(b, &old); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, string, error) {
		cmd := newServerTokenCmd()
		var out, errOut bytes.Buffer
		cmd.SetArgs(args)
		cmd.SetOut(&out)
		cmd.SetErr(&errOut)
		err := cmd.Execute()
		return out.String(), errOut.String(), err
	}
	newFile := filepath.Join(dir, "alice.json")
	if _, _, err := run("rotate", "--store", store, "--task", "t", "--client", "alice", "--out", newFile); err != nil {
		t.Fatal(err)
	}
	if _, stderr, err := run("revoke", "--store", store, "--task", "t", "--client", "bob"); err != nil || !strings.Contains(stderr, "token revoked") {
		t.Fatalf("revoke: %v %q", err, stderr)
	}
	if _, _, err := run("revoke", "--store", store, "--task", "t", "--client", "carol"); err == nil || !strings.Contains(err.Error(), "no client \"carol\"") {
		t.Fatalf("revoking an unknown client: %v", err)
	}
	var rotated map[string]string
	b, _ = os.ReadFile(newFile)
	if err := json.Unmarshal(b, &rotated); err != nil || len(rotated["alice"]) != 64 {
		t.Fatalf("rotated token file %q: %v", b, err)
	}
	s, err := federation.OpenStore(store)
	if err != nil {
		t.Fatal(err)
	}
	c, err := federation.NewCoordinator(s, federation.CoordinatorConfig{Fuser: noFuser{}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		client, token string
		ok            bool
	}{{"alice", rotated["alice"], true}, {"alice", old["alice"], false}, {"bob", old["bob"], false}} {
		_, err := c.GetTask(ctx, federation.Credentials{Token: tc.token}, "t", tc.client)
		if (err == nil) != tc.ok || (!tc.ok && (federation.CodeOf(err) != federation.CodePermissionDenied || !strings.Contains(err.Error(), "by the operator"))) {
			t.Errorf("%s with the %v token: %v", tc.client, map[bool]string{true: "new", false: "old"}[tc.ok], err)
		}
	}
	c.Close()
	s.Close()

	// One digit of a stored θ edited in the file: store check names the record.
	s, _ = federation.OpenStore(store)
	c, _ = federation.NewCoordinator(s, federation.CoordinatorConfig{Fuser: noFuser{}})
	sub := federation.Submission{TaskID: "t", Round: 1, ClientID: "alice", Theta: []float64{0.3125, -0.5, 0.25}, DemoCount: 1}
	spec, _ := s.Task("t")
	sub.Theta = sub.Theta[:spec.ThetaDim]
	if _, err := c.Submit(ctx, federation.Credentials{Token: rotated["alice"]}, sub); err != nil {
		t.Fatal(err)
	}
	c.Close()
	s.Close()
	raw, _ := os.ReadFile(store)
	if !bytes.Contains(raw, []byte("0.3125")) {
		t.Fatal("θ not found in the store file")
	}
	os.WriteFile(store, bytes.ReplaceAll(raw, []byte("0.3125"), []byte("0.9125")), 0o600)
	check := newServerStoreCmd()
	var out, errOut bytes.Buffer
	check.SetArgs([]string{"check", "--store", store})
	check.SetOut(&out)
	check.SetErr(&errOut)
	err = check.Execute()
	if err == nil || !strings.Contains(errOut.String(), "record subs/t/0000000001/alice: store: record subs/t/0000000001/alice: record checksum mismatch") {
		t.Fatalf("store check after an edit: %v\nstdout %s\nstderr %s", err, out.String(), errOut.String())
	}
}

// noFuser is a fuser for tests that never fuse.
type noFuser struct{}

func (noFuser) Validate(federation.TaskSpec) error { return nil }
func (noFuser) Fuse(context.Context, federation.TaskSpec, [][]float64, []int) (federation.FuseOutput, error) {
	return federation.FuseOutput{}, federation.ErrTransient
}
