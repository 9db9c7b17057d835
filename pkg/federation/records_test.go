package federation

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// editStoreFile replaces every occurrence of old by new (same length) in
// the closed store file at path, as a hand edit or bit rot would: bbolt's
// pages carry no checksum of their values. It fails unless old occurs.
func editStoreFile(t *testing.T, path, old, new string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(old) != len(new) || !bytes.Contains(b, []byte(old)) {
		t.Fatalf("%q not in the store file (or not the length of %q)", old, new)
	}
	if err := os.WriteFile(path, bytes.ReplaceAll(b, []byte(old), []byte(new)), 0o600); err != nil {
		t.Fatal(err)
	}
}

// problemsNamed returns the problems of CheckRecords on the store at path
// (opened read-only), failing unless one names record.
func problemsNamed(t *testing.T, path, record string) []RecordProblem {
	t.Helper()
	s, err := OpenStoreWith(path, StoreOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, err := s.CheckRecords()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range r.Problems {
		if p.Record == record && errors.Is(p.Err, ErrRecordChecksum) {
			return r.Problems
		}
	}
	t.Fatalf("store check does not name %s: %+v", record, r)
	return nil
}

// TestTamperedThetaNeverFused is issue 53's §3e: one digit of a stored θ
// changed in the file (0.3125 → 0.9125). The round must not fuse it when
// the quorum arrives, the client's replay of its real θ must be told the
// record is damaged (not AlreadyExists), and store check must name the
// record.
func TestTamperedThetaNeverFused(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, CoordinatorConfig{})
	tok := f.create(t, testSpec("p", 2, 2), "p1", "p2")
	if _, err := f.coord.Submit(ctx, Credentials{Token: tok["p1"]}, sub("p", "p1", 1, 0.3125, -0.5)); err != nil {
		t.Fatal(err)
	}
	f.close()
	editStoreFile(t, f.path, "0.3125", "0.9125")
	problemsNamed(t, f.path, "subs/p/0000000001/p1")
	f.open(t, CoordinatorConfig{})
	if _, err := f.coord.Submit(ctx, Credentials{Token: tok["p2"]}, sub("p", "p2", 1, 0.5, 0.5)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // ten deadline ticks: every chance to fuse
	fs, err := f.coord.GetFused(ctx, Credentials{Token: tok["p2"]}, "p", "p2", 1, 0)
	if err != nil || fs.Ready {
		t.Fatalf("the round with a tampered θ: ready %v (θ %v), %v; want not fused", fs.Ready, fs.Result.Theta, err)
	}
	sts, _ := f.coord.Status(ctx, Credentials{})
	if len(sts) != 1 || !strings.Contains(sts[0].Error, "record subs/p/0000000001/p1: record checksum mismatch") {
		t.Fatalf("status does not say why the round is not fused: %+v", sts)
	}
	_, err = f.coord.Submit(ctx, Credentials{Token: tok["p1"]}, sub("p", "p1", 1, 0.3125, -0.5))
	if err == nil || CodeOf(err) == CodeAlreadyExists || !strings.Contains(err.Error(), "checksum mismatch") {
		t.Fatalf("the honest replay: %v; want the damaged record named, not AlreadyExists", err)
	}
}

// TestTamperedFusedResultNeverServed: one digit of a stored fused result
// changed (the mean 0.3125 of 0.25 and 0.375, which appears nowhere else):
// GetFused refuses it and store check names the record.
func TestTamperedFusedResultNeverServed(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, CoordinatorConfig{})
	tok := f.create(t, testSpec("q", 2, 2), "a", "b")
	for c, th := range map[string]float64{"a": 0.25, "b": 0.375} {
		if _, err := f.coord.Submit(ctx, Credentials{Token: tok[c]}, sub("q", c, 1, th, 0)); err != nil {
			t.Fatal(err)
		}
	}
	fs, err := f.coord.GetFused(ctx, Credentials{Token: tok["a"]}, "q", "a", 1, 5*time.Second)
	if err != nil || !fs.Ready || fs.Result.Theta[0] != 0.3125 {
		t.Fatalf("fused %+v, %v; want θ[0] = 0.3125", fs, err)
	}
	f.close()
	editStoreFile(t, f.path, "0.3125", "0.9125")
	problemsNamed(t, f.path, "fused/q/0000000001")
	f.open(t, CoordinatorConfig{})
	fs, err = f.coord.GetFused(ctx, Credentials{Token: tok["a"]}, "q", "a", 1, 0)
	if err == nil || fs.Ready || !strings.Contains(err.Error(), "fused/q/0000000001: record checksum mismatch") {
		t.Fatalf("GetFused of a tampered result: ready %v θ %v, %v; want refused naming the record", fs.Ready, fs.Result.Theta, err)
	}
}

// TestRecordMovedOrUnsealedRefused: a record copied under another key (θ
// of one client as another's), or stripped of its checksum, is refused.
func TestRecordMovedOrUnsealedRefused(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, CoordinatorConfig{})
	tok := f.create(t, testSpec("m", 2, 3), "a", "b", "c")
	if _, err := f.coord.Submit(ctx, Credentials{Token: tok["a"]}, sub("m", "a", 1, 1, 2)); err != nil {
		t.Fatal(err)
	}
	if err := f.store.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSubs).Bucket([]byte("m"))
		v := bytes.Clone(b.Get(subKey(1, "a")))
		if err := b.Put(subKey(1, "b"), v); err != nil { // a's sealed record as b's
			return err
		}
		return b.Put(subKey(1, "c"), v[:len(v)-trailerLen]) // a's JSON without its checksum as c's
	}); err != nil {
		t.Fatal(err)
	}
	f.close()
	problems := problemsNamed(t, f.path, "subs/m/0000000001/b")
	problemsNamed(t, f.path, "subs/m/0000000001/c")
	if len(problems) != 2 {
		t.Fatalf("problems %+v, want exactly b's and c's", problems)
	}
}

// TestLegacyStoreMigrated: a store written before record checksums (no
// meta bucket, bare JSON) opens read-only as it is, with store check
// counting the records without a checksum; opened for writing, every
// record gets its checksum, and a later edit is caught.
func TestLegacyStoreMigrated(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, CoordinatorConfig{})
	tok := f.create(t, testSpec("l", 2, 2), "a", "b")
	if _, err := f.coord.Submit(ctx, Credentials{Token: tok["a"]}, sub("l", "a", 1, 0.3125, 1)); err != nil {
		t.Fatal(err)
	}
	// Strip every trailer and the meta bucket: the layout of earlier versions.
	var records int
	if err := f.store.db.Update(func(tx *bolt.Tx) error {
		var strip func(b *bolt.Bucket) error
		strip = func(b *bolt.Bucket) error {
			return b.ForEach(func(k, v []byte) error {
				if v == nil {
					return strip(b.Bucket(k))
				}
				records++
				return b.Put(k, bytes.Clone(v[:len(v)-trailerLen]))
			})
		}
		for _, n := range [][]byte{bucketTasks, bucketState, bucketSubs, bucketFused} {
			if err := strip(tx.Bucket(n)); err != nil {
				return err
			}
		}
		return tx.DeleteBucket(bucketMeta)
	}); err != nil {
		t.Fatal(err)
	}
	f.close()
	ro, err := OpenStoreWith(f.path, StoreOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	r, err := ro.CheckRecords()
	ro.Close()
	if err != nil || !r.Legacy || r.Unsealed != records || r.Records != records || len(r.Problems) != 0 {
		t.Fatalf("read-only check of a legacy store: %+v, %v; want %d records, all unsealed, no problems", r, err, records)
	}
	s, err := OpenStore(f.path)
	if err != nil {
		t.Fatal(err)
	}
	if s.Migrated() != records {
		t.Fatalf("migrated %d records, want %d", s.Migrated(), records)
	}
	subs, err := s.Submissions("l", 1)
	s.Close()
	if err != nil || len(subs) != 1 || subs[0].Theta[0] != 0.3125 {
		t.Fatalf("after migration: %+v, %v", subs, err)
	}
	editStoreFile(t, f.path, "0.3125", "0.9125")
	problemsNamed(t, f.path, "subs/l/0000000001/a")
}

// TestEveryAcknowledgementLogged: a duplicate's acknowledgement has its
// "accepted" line too, so a submission whose first line a SIGKILL cut off
// (stored, reply never sent) is on record once its client's retry is
// acknowledged.
func TestEveryAcknowledgementLogged(t *testing.T) {
	var logs lockedBuffer
	f := newFixture(t, CoordinatorConfig{Logf: func(format string, args ...any) { fmt.Fprintf(&logs, format+"\n", args...) }})
	tok := f.create(t, testSpec("a", 2, 2), "c0", "c1")
	for range 2 {
		if _, err := f.coord.Submit(context.Background(), Credentials{Token: tok["c0"]}, sub("a", "c0", 1, 1, 2)); err != nil {
			t.Fatal(err)
		}
	}
	if n := strings.Count(logs.String(), "accepted theta from c0"); n != 2 {
		t.Fatalf("%d accepted lines for two acknowledgements:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "again (duplicate of the submission stored at") {
		t.Fatalf("the duplicate's line does not say so:\n%s", logs.String())
	}
}
