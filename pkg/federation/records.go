package federation

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// This file gives every record of a Store a checksum (issue 53: one digit
// changed inside a stored θ went unnoticed, was fused, and made the honest
// client's replay look like equivocation). bbolt checks only the structure
// of its pages, not the values in them.
//
// A record is its JSON followed by a trailer: recordMagic and the SHA-256
// of the record's bucket path, key and JSON (so a record copied to another
// key or task fails too). Every read verifies it; a mismatch is an error
// wrapping ErrRecordChecksum that names the record, and the record is never
// used (fused, served or overwritten). The checksum detects damage and
// edits by anything but fedirl; it is not a MAC: someone who can write the
// file and recompute SHA-256 can still forge a record.
//
// Stores written before checksums (no "meta" bucket) are migrated when a
// server or an offline write opens them: every record gets its trailer in
// one transaction and the meta bucket records the format. Opened read-only,
// such a store is read as it is and "store check" says how many records
// carry no checksum. In a checksummed store, a record without a trailer is
// refused like a mismatch (stripping the trailer does not hide an edit).

// ErrRecordChecksum is wrapped by the error of reading a record whose
// checksum does not match its contents (or that lacks one in a
// checksummed store).
var ErrRecordChecksum = errors.New("record checksum mismatch")

var (
	bucketMeta = []byte("meta")
	keyFormat  = []byte("format")
)

// recordFormat is the store format with record checksums.
const recordFormat = "2"

// recordMagic starts a record's checksum trailer; JSON never holds a NUL.
var recordMagic = []byte("\x00fck1")

const trailerLen = 5 + sha256.Size

// recordSum returns the checksum of a record's JSON at key in bucket path.
func recordSum(path string, key, js []byte) [sha256.Size]byte {
	h := sha256.New()
	h.Write([]byte(path))
	h.Write([]byte{0})
	h.Write(key)
	h.Write([]byte{0})
	h.Write(js)
	var s [sha256.Size]byte
	h.Sum(s[:0])
	return s
}

// sealRecord returns js with its checksum trailer.
func sealRecord(path string, key, js []byte) []byte {
	s := recordSum(path, key, js)
	out := make([]byte, 0, len(js)+trailerLen)
	return append(append(append(out, js...), recordMagic...), s[:]...)
}

// openRecord verifies the record raw stored at key in bucket path and
// returns its JSON. A record without a trailer is accepted only from a
// store written before checksums (legacy).
func openRecord(path string, key, raw []byte, legacy bool) ([]byte, error) {
	n := len(raw)
	if n < trailerLen || !bytes.Equal(raw[n-trailerLen:n-sha256.Size], recordMagic) {
		if legacy {
			return raw, nil
		}
		return nil, fmt.Errorf("store: record %s/%s: %w: it has no checksum, which every record of this store carries. The record was changed outside fedirl and is not used; restore the store from a backup, or delete the task (fedirl server task delete)", path, key, ErrRecordChecksum)
	}
	js := raw[:n-trailerLen]
	if s := recordSum(path, key, js); !bytes.Equal(s[:], raw[n-sha256.Size:]) {
		return nil, fmt.Errorf("store: record %s/%s: %w (stored %s…, computed %s…): the record was changed outside fedirl (disk damage or an edit) and is not used. Restore the store from a backup, or delete the task (fedirl server task delete)",
			path, key, ErrRecordChecksum, hex.EncodeToString(raw[n-sha256.Size:][:6]), hex.EncodeToString(s[:6]))
	}
	return js, nil
}

// legacyStore reports whether tx's store predates record checksums.
func legacyStore(tx *bolt.Tx) bool {
	m := tx.Bucket(bucketMeta)
	return m == nil || string(m.Get(keyFormat)) != recordFormat
}

// recordPath is the bucket path records of a task's nested bucket are
// checksummed under ("subs/ID", "fused/ID").
func recordPath(bucket []byte, task string) string { return string(bucket) + "/" + task }

// putRecord stores v as key's record in b, at bucket path path.
func putRecord(b *bolt.Bucket, path string, key []byte, v any) error {
	js, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return b.Put(key, sealRecord(path, key, js))
}

// getRecord reads and verifies key's record in b (path), returning nil
// when there is none.
func getRecord(tx *bolt.Tx, b *bolt.Bucket, path string, key []byte) ([]byte, error) {
	raw := b.Get(key)
	if raw == nil {
		return nil, nil
	}
	return openRecord(path, key, raw, legacyStore(tx))
}

// migrateRecords gives every record of a store written before checksums
// its trailer and marks the store checksummed, in tx; it returns how many
// records it sealed. A new store is only marked.
func migrateRecords(tx *bolt.Tx) (int, error) {
	if !legacyStore(tx) {
		return 0, nil
	}
	n := 0
	seal := func(b *bolt.Bucket, path string) error {
		var keys, vals [][]byte
		err := b.ForEach(func(k, v []byte) error {
			if v != nil { // not a nested bucket
				keys, vals = append(keys, bytes.Clone(k)), append(vals, bytes.Clone(v))
			}
			return nil
		})
		if err != nil {
			return err
		}
		for i, k := range keys {
			if err := b.Put(k, sealRecord(path, k, vals[i])); err != nil {
				return err
			}
			n++
		}
		return nil
	}
	for _, name := range [][]byte{bucketTasks, bucketState} {
		if err := seal(tx.Bucket(name), string(name)); err != nil {
			return n, err
		}
	}
	for _, name := range [][]byte{bucketSubs, bucketFused} {
		top := tx.Bucket(name)
		var tasks []string
		top.ForEach(func(k, v []byte) error {
			if v == nil {
				tasks = append(tasks, string(k))
			}
			return nil
		})
		for _, task := range tasks {
			if err := seal(top.Bucket([]byte(task)), recordPath(name, task)); err != nil {
				return n, err
			}
		}
	}
	m, err := tx.CreateBucketIfNotExists(bucketMeta)
	if err != nil {
		return n, err
	}
	return n, m.Put(keyFormat, []byte(recordFormat))
}

// RecordProblem is one record that "store check" found unusable.
type RecordProblem struct {
	Record string // bucket path and key, e.g. "subs/t/0000000001/alice"
	Err    error
}

// CheckReport is what Store.CheckRecords found.
type CheckReport struct {
	Records   int  // records read
	Unsealed  int  // records without a checksum (a store written before them, opened read-only)
	Legacy    bool // the store predates record checksums
	Problems  []RecordProblem
	Truncated bool // more problems than MaxCheckProblems; the rest are counted in Records only
}

// MaxCheckProblems bounds the problems CheckRecords lists.
const MaxCheckProblems = 1000

// CheckRecords reads every record of the store, verifying its checksum and
// decoding it as its bucket's kind, and names every one that fails.
func (s *Store) CheckRecords() (CheckReport, error) {
	var r CheckReport
	err := s.db.View(func(tx *bolt.Tx) error {
		r.Legacy = legacyStore(tx)
		check := func(b *bolt.Bucket, path string, decode func([]byte) error) {
			if b == nil {
				return
			}
			b.ForEach(func(k, v []byte) error {
				if v == nil {
					return nil
				}
				r.Records++
				n := len(v)
				if r.Legacy && (n < trailerLen || !bytes.Equal(v[n-trailerLen:n-sha256.Size], recordMagic)) {
					r.Unsealed++
				}
				js, err := openRecord(path, k, v, r.Legacy)
				if err == nil {
					if err = decode(js); err != nil {
						err = fmt.Errorf("store: record %s/%s: %w", path, k, err)
					}
				}
				if err != nil {
					if len(r.Problems) < MaxCheckProblems {
						r.Problems = append(r.Problems, RecordProblem{Record: path + "/" + string(k), Err: err})
					} else {
						r.Truncated = true
					}
				}
				return nil
			})
		}
		check(tx.Bucket(bucketTasks), string(bucketTasks), func(b []byte) error { _, err := decodeTaskRecord(b); return err })
		check(tx.Bucket(bucketState), string(bucketState), func(b []byte) error { _, err := decodeState(b); return err })
		for _, kind := range []struct {
			name   []byte
			decode func([]byte) error
		}{
			{bucketSubs, func(b []byte) error { _, err := decodeSubmission(b); return err }},
			{bucketFused, func(b []byte) error { _, err := decodeFused(b); return err }},
		} {
			top := tx.Bucket(kind.name)
			if top == nil {
				continue
			}
			top.ForEach(func(k, v []byte) error {
				if v == nil {
					check(top.Bucket(k), recordPath(kind.name, string(k)), kind.decode)
				}
				return nil
			})
		}
		return nil
	})
	return r, err
}
