package federation

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// goodStore writes a store with a few tasks and returns its path and bytes.
func goodStore(t *testing.T) (string, []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fed.db")
	s, err := OpenStore(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		spec := testSpec(fmt.Sprintf("task-%02d", i), 8, 3)
		spec.Description = strings.Repeat("x", 500)
		if _, err := s.CreateTask(spec, []string{"a", "b", "c"}, time.Unix(0, 0)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, b
}

// TestDamagedStoreIsRefusedNotPanicking: a damaged page, a truncated file and
// an empty file are refused with an error naming the file (before this
// check bbolt panicked on the first two and the empty file silently became
// an empty store), and the file is left as it was.
func TestDamagedStoreIsRefusedNotPanicking(t *testing.T) {
	path, good := goodStore(t)
	if len(good) < 16384 {
		t.Fatalf("test store is only %d bytes", len(good))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for name, damage := range map[string]func([]byte) []byte{
		"damaged page": func(b []byte) []byte {
			b = bytes.Clone(b)
			for i := 8192; i < 8192+4096; i++ {
				b[i] = byte(rng.Uint32())
			}
			return b
		},
		"truncated": func(b []byte) []byte { return bytes.Clone(b[:len(b)/2]) },
		// Both headers gone (issue 53 §3d: called "a binary file of another kind").
		"both meta pages zeroed": func(b []byte) []byte {
			b = bytes.Clone(b)
			clear(b[:2*4096])
			return b
		},
		"empty": func([]byte) []byte { return nil },
	} {
		t.Run(name, func(t *testing.T) {
			bad := damage(good)
			p := filepath.Join(filepath.Dir(path), strings.ReplaceAll(name, " ", "-")+".db")
			if err := os.WriteFile(p, bad, 0o600); err != nil {
				t.Fatal(err)
			}
			for _, o := range []StoreOptions{{Create: true}, {ReadOnly: true}} {
				s, err := OpenStoreWith(p, o)
				if err == nil {
					s.Close()
					t.Fatalf("%+v: damaged store opened", o)
				}
				if !errors.Is(err, ErrStoreDamaged) || !strings.Contains(err.Error(), p) {
					t.Fatalf("%+v: error %q should wrap ErrStoreDamaged and name %s", o, err, p)
				}
			}
			after, _ := os.ReadFile(p)
			if !bytes.Equal(after, bad) {
				t.Fatal("refusing the store modified the file")
			}
		})
	}
	// The intact store still opens, read-only and read-write, with its tasks.
	for _, o := range []StoreOptions{{ReadOnly: true}, {}} {
		s, err := OpenStoreWith(path, o)
		if err != nil {
			t.Fatalf("%+v: %v", o, err)
		}
		sts, err := s.Statuses()
		s.Close()
		if err != nil || len(sts) != 40 {
			t.Fatalf("%+v: %d tasks, %v", o, len(sts), err)
		}
	}
}

// TestMissingStoreCreatedOnlyWhenAsked: a mistyped path is an error unless
// the caller asks for a new store; read-only never creates.
func TestMissingStoreCreatedOnlyWhenAsked(t *testing.T) {
	p := filepath.Join(t.TempDir(), "new.db")
	for _, o := range []StoreOptions{{}, {ReadOnly: true}, {ReadOnly: true, Create: true}} {
		if _, err := OpenStoreWith(p, o); !errors.Is(err, ErrNoStore) {
			t.Fatalf("%+v: %v, want ErrNoStore", o, err)
		}
		if _, err := os.Stat(p); err == nil {
			t.Fatalf("%+v created the file", o)
		}
	}
	s, err := OpenStoreWith(p, StoreOptions{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
}

func TestDeleteTask(t *testing.T) {
	f := newFixture(t, CoordinatorConfig{})
	tok := f.create(t, testSpec("gone", 1, 2), "a", "b")
	f.create(t, testSpec("kept", 1, 2), "a", "b")
	if _, err := f.coord.Submit(context.Background(), Credentials{Token: tok["a"]}, sub("gone", "a", 1, 1)); err != nil {
		t.Fatal(err)
	}
	if err := f.store.DeleteTask("gone"); err != nil {
		t.Fatal(err)
	}
	sts, _ := f.store.Statuses()
	if len(sts) != 1 || sts[0].ID != "kept" {
		t.Fatalf("after delete: %+v", sts)
	}
	if subs, err := f.store.Submissions("gone", 1); err == nil && len(subs) != 0 {
		t.Fatalf("%d submissions of a deleted task", len(subs))
	}
	if err := f.store.DeleteTask("gone"); CodeOf(err) != CodeNotFound {
		t.Fatalf("deleting twice: %v", err)
	}
	// The id is free again.
	if _, err := f.store.CreateTask(testSpec("gone", 1, 2), []string{"a", "b"}, time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
}

// TestNonStoreFileIsNamed: a --store path holding some other file is
// refused as "not a fedirl store" saying what the file looks like, not
// called damaged, and left as it was.
func TestNonStoreFileIsNamed(t *testing.T) {
	dir := t.TempDir()
	for name, c := range map[string]struct {
		body string
		want string
	}{
		"tokens.json": {`{"alice": "0123"}`, "a JSON file"},
		"notes.txt":   {"remember the milk\n" + strings.Repeat("x", 200), "a text file"},
		"old.sqlite":  {"SQLite format 3\x00" + strings.Repeat("\x00", 100), "an SQLite database"},
		"random.bin":  {string(randomBytes(40000)), "a binary file of another kind"},
	} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(c.body), 0o600)
		for _, o := range []StoreOptions{{Create: true}, {ReadOnly: true}} {
			s, err := OpenStoreWith(p, o)
			if err == nil {
				s.Close()
				t.Fatalf("%s opened as a store", name)
			}
			if !errors.Is(err, ErrNotStore) || errors.Is(err, ErrStoreDamaged) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), p) {
				t.Errorf("%s %+v: %v, want ErrNotStore naming %s and %q", name, o, err, p, c.want)
			}
		}
		if after, _ := os.ReadFile(p); string(after) != c.body {
			t.Errorf("%s modified", name)
		}
	}
}

// randomBytes returns n bytes from a fixed-seed source.
func randomBytes(n int) []byte {
	rng := rand.New(rand.NewPCG(7, 7))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}
