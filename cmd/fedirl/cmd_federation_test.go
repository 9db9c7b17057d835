package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fedirl/fedirl/pkg/federation"
	"github.com/fedirl/fedirl/pkg/fusion"
	"github.com/fedirl/fedirl/pkg/npy"
	"github.com/fedirl/fedirl/pkg/privacy"
	"github.com/fedirl/fedirl/pkg/tasks"
)

// execTaskCreate runs "fedirl server task create" with args on a fresh
// command, stdin reading from in.
func execTaskCreate(t *testing.T, in string, args ...string) error {
	t.Helper()
	cmd := newServerTaskCreateCmd()
	cmd.SetArgs(args)
	cmd.SetIn(strings.NewReader(in))
	cmd.SetOut(new(strings.Builder))
	cmd.SetErr(new(strings.Builder))
	return cmd.Execute()
}

// TestTaskCreateClientsFile: 60,000 client ids (more than the kernel lets
// --clients carry) from --clients-file make a task with 60,000 clients and
// 60,000 distinct tokens; "-" reads stdin; a bad id names its line.
func TestTaskCreateClientsFile(t *testing.T) {
	dir := t.TempDir()
	var ids strings.Builder
	for i := range 60000 {
		fmt.Fprintf(&ids, "client-%05d\n", i)
	}
	file := filepath.Join(dir, "clients.txt")
	if err := os.WriteFile(file, []byte(ids.String()+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	store, tokensOut := filepath.Join(dir, "fed.db"), filepath.Join(dir, "tokens.json")
	if err := execTaskCreate(t, "", "--store", store, "--id", "big", "--gridworld-size", "5", "--clients-file", file, "--quorum", "3", "--tokens-out", tokensOut); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(tokensOut)
	if err != nil {
		t.Fatal(err)
	}
	var tokens map[string]string
	if err := json.Unmarshal(b, &tokens); err != nil {
		t.Fatal(err)
	}
	distinct := map[string]bool{}
	for _, tok := range tokens {
		distinct[tok] = true
	}
	if len(tokens) != 60000 || len(distinct) != 60000 || tokens["client-59999"] == "" {
		t.Fatalf("%d tokens for %d clients (%d distinct), want 60000", len(tokens), 60000, len(distinct))
	}
	sts, err := storeStatuses(store)
	if err != nil || len(sts) != 1 || len(sts[0].ClientsAllowed) != 60000 {
		t.Fatalf("store holds %d tasks (%v)", len(sts), err)
	}

	if err := execTaskCreate(t, "alice\n  bob \n\n", "--store", store, "--id", "small", "--gridworld-size", "5", "--clients-file", "-", "--tokens-out", filepath.Join(dir, "t2.json")); err != nil {
		t.Fatal(err)
	}
	if st, _ := storeStatuses(store); len(st) != 2 || strings.Join(st[1].ClientsAllowed, ",") != "alice,bob" {
		t.Fatalf("stdin clients: %+v", st)
	}
	err = execTaskCreate(t, "alice\nb@d\n", "--store", store, "--id", "bad", "--gridworld-size", "5", "--clients-file", "-")
	if err == nil || !strings.Contains(err.Error(), "--clients-file - line 2") {
		t.Fatalf("bad id: %v", err)
	}
}

// TestTaskCreateRefusesUnaffordableTasks: the gridworld probe of size
// 100000 (the process ran out of memory) and a 5 MB description are refused
// before anything is built or stored, naming the field and the bound.
func TestTaskCreateRefusesUnaffordableTasks(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "fed.db")
	err := execTaskCreate(t, "", "--store", store, "--id", "huge", "--gridworld-size", "100000", "--clients", "a")
	if err == nil || !strings.Contains(err.Error(), "--gridworld-size: gridworld size 100000: probe: 40000000000 points, above the server's bound of 2097152 (--max-probe-points)") {
		t.Fatalf("size 100000: %v", err)
	}
	err = execTaskCreate(t, "", "--store", store, "--id", "g", "--gridworld-size", "50", "--clients", "a", "--max-probe-points", "9999")
	if err == nil || !strings.Contains(err.Error(), "10000 points, above the server's bound of 9999") {
		t.Fatalf("size 50 under --max-probe-points 9999: %v", err)
	}
	spec := federation.TaskSpec{ID: "long", Description: strings.Repeat("x", 5<<20)}
	b, _ := json.Marshal(spec)
	specFile := filepath.Join(dir, "spec.json")
	os.WriteFile(specFile, b, 0o644)
	err = execTaskCreate(t, "", "--store", store, "--spec", specFile, "--gridworld-size", "5", "--clients", "a")
	if err == nil || !strings.Contains(err.Error(), "description is 5242880 bytes, above the server's bound of 4096 (--max-description-bytes)") {
		t.Fatalf("5 MB description: %v", err)
	}
	if _, err := os.Stat(store); !os.IsNotExist(err) {
		t.Fatalf("a refused task created the store (%v)", err)
	}
}

// TestMetricsWarning: metrics beyond loopback warn unless a token guards
// them over TLS (the issue: served unauthenticated on any address with no
// warning).
func TestMetricsWarning(t *testing.T) {
	for _, tc := range []struct {
		addr       string
		token, tls bool
		want       string
	}{
		{"127.0.0.1:9464", false, false, ""},
		{"[::1]:9464", false, false, ""},
		{"0.0.0.0:9464", false, false, "served to anyone"},
		{"10.0.0.5:9464", true, false, "plaintext HTTP"},
		{"10.0.0.5:9464", true, true, ""},
	} {
		got := metricsWarning(tc.addr, tc.token, tc.tls)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("metricsWarning(%s, token %v, tls %v) = %q, want %q", tc.addr, tc.token, tc.tls, got, tc.want)
		}
	}
}

// TestTaskCreateFusionFlags: --fusion takes every registry name (and the
// alias barycentric), the method's options come from their flags, and a flag
// the method cannot use is refused naming its key.
func TestTaskCreateFusionFlags(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "fed.db")
	for i, name := range append(fusion.Methods(), fusion.MethodBarycentric) {
		if err := execTaskCreate(t, "", "--store", store, "--id", fmt.Sprint("t", i), "--gridworld-size", "5", "--clients", "a",
			"--fusion", name, "--tokens-out", filepath.Join(dir, "tok.json")); err != nil {
			t.Fatalf("--fusion %s: %v", name, err)
		}
	}
	if err := execTaskCreate(t, "", "--store", store, "--id", "tm", "--gridworld-size", "5", "--clients", "a",
		"--fusion", "trimmed-mean", "--trim-fraction", "0", "--tokens-out", filepath.Join(dir, "tok.json")); err != nil {
		t.Fatal(err)
	}
	s, err := federation.OpenStoreWith(store, federation.StoreOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	spec, err := s.Task("tm")
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	if o, err := fusion.DecodeOptions(spec.Fusion); err != nil || o.TrimFraction == nil || *o.TrimFraction != 0 {
		t.Fatalf("stored fusion %s: %+v, %v", spec.Fusion, o, err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--fusion", "median", "--trim-fraction", "0.1"}, "fusion.trim_fraction"},
		{[]string{"--fusion", "mean", "--sigma-mode", "per-client"}, "fusion.sigma_mode"},
		{[]string{"--fusion", "krum", "--byzantine", "-1"}, "fusion.byzantine"},
		{[]string{"--fusion", "fedavg"}, "normalized-mean"},
	} {
		args := append([]string{"--store", store, "--id", "bad", "--gridworld-size", "5", "--clients", "a"}, c.args...)
		if err := execTaskCreate(t, "", args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one naming %s", c.args, err, c.want)
		}
	}
}

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
		{append([]string{"--central-dp-bound", "median"}, central...), "--central-dp-bound median"},
		{[]string{"--central-dp-bound", "output"}, "go together"},
	} {
		if err := execTaskCreate(t, "", append(append([]string{"--id", "x"}, base...), c.args...)...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error containing %q", c.args, err, c.want)
		}
	}
	if err := execTaskCreate(t, "", append(append([]string{"--id", "m"}, base...), central...)...); err != nil {
		t.Fatal(err)
	}
	if err := execTaskCreate(t, "", append(append([]string{"--id", "b", "--fusion", "barycentric", "--central-dp-bound", "output"}, base...), central...)...); err != nil {
		t.Fatalf("barycentric fusion with the output bound: %v", err)
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
	if want := (privacy.Central{Epsilon: 1, Delta: 1e-5, Clip: 0.05, Bound: privacy.BoundMean}); spec.CentralPrivacy == nil || *spec.CentralPrivacy != want {
		t.Errorf("stored central privacy %+v, want %+v", spec.CentralPrivacy, want)
	}
}

// TestServerNeedsAdminToken: without --admin-token-file a server serving
// TLS, or plaintext beyond loopback, refuses to start (Status and
// CreateTask would be token-less calls any peer can make); only the
// plaintext loopback quick start may run without one. Nothing is opened
// before the refusal: the store named does not exist.
func TestServerNeedsAdminToken(t *testing.T) {
	dir := t.TempDir()
	crt, key := filepath.Join(dir, "server.crt"), filepath.Join(dir, "server.key")
	for _, args := range [][]string{
		{"--tls-cert", crt, "--tls-key", key, "--listen", "127.0.0.1:0"},
		{"--tls-cert", crt, "--tls-key", key, "--listen", "0.0.0.0:0"},
	} {
		cmd := newServerCmd()
		cmd.SetArgs(append(args, "--store", filepath.Join(dir, "missing.db")))
		cmd.SetOut(new(strings.Builder))
		cmd.SetErr(new(strings.Builder))
		err := cmd.Execute()
		if err == nil || !strings.Contains(err.Error(), "--admin-token-file is required") {
			t.Fatalf("server %v: %v, want a refusal asking for --admin-token-file", args, err)
		}
	}
}

// TestTaskCreatePointsSpec: a points task whose points and Φ are .npy files
// next to the spec is created from --spec (the files inlined), and a points
// file with an infinite coordinate or a ragged inline point is refused
// before anything is stored, naming the field, the point and the coordinate.
func TestTaskCreatePointsSpec(t *testing.T) {
	dir := t.TempDir()
	pts := []float64{0, 0, 1, 0, 0, 1, 1, 1}
	write := func(name string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("points.npy", npy.EncodeFloat64([]int{4, 2}, pts))
	write("phi.npy", npy.EncodeFloat64([]int{4, 1}, []float64{1, 2, 3, 4}))
	bad := append([]float64(nil), pts...)
	bad[5] = math.Inf(-1)
	write("bad.npy", npy.EncodeFloat64([]int{4, 2}, bad))
	spec := func(name, probe string) string {
		write(name, []byte(`{"id": "`+strings.TrimSuffix(name, ".json")+`", "env_family": "points", "theta_dim": 1, "fusion": {"method": "barycenter"}, "probe": `+probe+`}`))
		return filepath.Join(dir, name)
	}
	store := filepath.Join(dir, "fed.db")
	if err := execTaskCreate(t, "", "--store", store, "--spec", spec("pts.json", `{"points_file": "points.npy", "phi_file": "phi.npy"}`), "--clients", "a,b", "--tokens-out", filepath.Join(dir, "tok.json")); err != nil {
		t.Fatal(err)
	}
	if sts, err := storeStatuses(store); err != nil || len(sts) != 1 {
		t.Fatalf("store holds %d tasks (%v)", len(sts), err)
	}
	for _, c := range []struct{ probe, want string }{
		{`{"points_file": "bad.npy", "phi_file": "phi.npy"}`, "probe: points_npy[2][1] = -Inf"},
		{`{"points": [[0, 0], [1], [0, 1], [1, 1]], "phi_file": "phi.npy"}`, "probe: points[1]: 1 coordinates, want 2"},
	} {
		err := execTaskCreate(t, "", "--store", filepath.Join(dir, "bad.db"), "--spec", spec("bad.json", c.probe), "--clients", "a")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.probe, err, c.want)
		}
		if _, err := os.Stat(filepath.Join(dir, "bad.db")); err == nil {
			t.Errorf("%s: a refused task created the store", c.probe)
		}
	}
}

// TestTaskCreateControlEnv: --env makes a control task whose stored probe
// and theta_dim are tasks.ControlTaskProbe's for the environment and
// --lattice; --env with --gridworld-size, --lattice without --env and an
// environment without a control lattice are refused before anything is
// stored.
func TestTaskCreateControlEnv(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "fed.db")
	if err := execTaskCreate(t, "", "--store", store, "--id", "cart", "--env", "CartPole-v1", "--lattice", "fine", "--clients", "a", "--tokens-out", filepath.Join(dir, "t.json")); err != nil {
		t.Fatal(err)
	}
	st, err := federation.OpenStoreWith(store, federation.StoreOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	spec, err := st.Task("cart")
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	probe, dim, err := tasks.ControlTaskProbe("CartPole-v1", "fine", federation.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if spec.EnvFamily != "control" || spec.ThetaDim != dim || string(spec.Probe) != string(probe) {
		t.Errorf("stored %s task, theta_dim %d, probe %.80s…; want control, %d, %.80s…", spec.EnvFamily, spec.ThetaDim, spec.Probe, dim, probe)
	}
	bad := filepath.Join(dir, "bad.db")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--env", "Pendulum-v1", "--gridworld-size", "5"}, "--env (a control task) and --gridworld-size (a grid-world task) are exclusive"},
		{[]string{"--lattice", "fine"}, "--lattice is the lattice of a control task: give --env with it"},
		{[]string{"--env", "BipedalWalker-v3"}, `--env BipedalWalker-v3: unknown environment: "BipedalWalker-v3" has no control-study discretisation`},
		{[]string{"--env", "Pendulum-v1", "--lattice", "coarse"}, `--env Pendulum-v1: lattice preset "coarse": unknown`},
	} {
		err := execTaskCreate(t, "", append([]string{"--store", bad, "--id", "x", "--clients", "a"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
	if _, err := os.Stat(bad); !os.IsNotExist(err) {
		t.Errorf("a refused task created the store (%v)", err)
	}
}
