package federation

import (
	"fmt"
	"maps"
	"time"

	bolt "go.etcd.io/bbolt"
)

// This file holds token revocation on a running server (issue 53): the
// operator revokes a client's token (or rotates it, issuing a new one), the
// change is stored in the task's record, the coordinator refuses the old
// token at once with the reason, and the gRPC adapter closes the client's
// connections.

// revocation is a revoked token's entry in a task record.
type revocation struct {
	Client  string    `json:"client"`
	At      time.Time `json:"at"`
	Rotated bool      `json:"rotated,omitempty"` // a new token was issued in its place
}

// reason is what a caller presenting the revoked token is told.
func (r revocation) reason(task string) string {
	verb := "revoked"
	if r.Rotated {
		verb = "rotated (replaced by a new token)"
	}
	return fmt.Sprintf("the token of client %s on task %s was %s by the operator at %s", r.Client, task, verb, r.At.UTC().Format(time.RFC3339))
}

// revokeInRecord returns a copy of rec in which client's current token is
// revoked as of at and replaced by newHash (a token's hash when rotating,
// or the hash of a token nobody holds when revoking).
func revokeInRecord(rec taskRecord, client, newHash string, rotated bool, at time.Time) (taskRecord, error) {
	old, ok := rec.Clients[client]
	if !ok {
		return rec, errorf(CodeNotFound, "task %s has no client %q", rec.Spec.ID, truncate(client))
	}
	rec.Clients = maps.Clone(rec.Clients)
	rec.Revoked = maps.Clone(rec.Revoked)
	if rec.Revoked == nil {
		rec.Revoked = map[string]revocation{}
	}
	rec.Revoked[old] = revocation{Client: client, At: at.UTC(), Rotated: rotated}
	rec.Clients[client] = newHash
	return rec, nil
}

// replaceClientToken implements roundStore.
func (s *Store) replaceClientToken(id, client, newHash string, rotated bool, at time.Time) (taskRecord, error) {
	var rec taskRecord
	err := s.db.Update(func(tx *bolt.Tx) error {
		r, err := readTask(tx, id)
		if err != nil {
			return err
		}
		if rec, err = revokeInRecord(r, client, newHash, rotated, at); err != nil {
			return err
		}
		return putRecord(tx.Bucket(bucketTasks), string(bucketTasks), []byte(id), &rec)
	})
	return rec, err
}

// replaceClientToken implements roundStore.
func (m *memStore) replaceClientToken(id, client, newHash string, rotated bool, at time.Time) (taskRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, err := m.get(id)
	if err != nil {
		return taskRecord{}, err
	}
	rec, err := revokeInRecord(t.rec, client, newHash, rotated, at)
	if err != nil {
		return taskRecord{}, err
	}
	t.rec = rec
	return rec, nil
}

// Revoke and Rotate are the two verbs of RevokeToken.
const (
	Revoke = false
	Rotate = true
)

// RevokeToken revokes the token of client on task (rotate: issues a new one
// and returns it). It needs the admin token (cred). It is effective at once:
// the old token is refused at its next call's headers with the reason, and
// every connection the client authenticated is closed by the gRPC adapter.
func (c *Coordinator) RevokeToken(cred Credentials, task, client string, rotate bool) (newToken string, err error) {
	if c.cfg.AdminToken == "" {
		return "", errorf(CodePermissionDenied, "this server has no admin token; revoke tokens offline with \"fedirl server token revoke --store\"")
	}
	if !c.isAdmin(cred) {
		return "", errorf(CodeUnauthenticated, "revoking a token requires the admin token")
	}
	return c.revokeToken(task, client, rotate)
}

// revokeToken is RevokeToken without the admin check.
func (c *Coordinator) revokeToken(task, client string, rotate bool) (string, error) {
	if !ValidID(task) || !ValidID(client) {
		return "", errorf(CodeInvalidArgument, "task %q and client %q must be valid identifiers", truncate(task), truncate(client))
	}
	tok := NewToken()
	h := HashToken(tok)
	c.revokeMu.Lock()
	defer c.revokeMu.Unlock()
	rec, err := reviseToken(c.store, task, client, h, rotate, c.cfg.Now())
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	c.tasks[task] = &rec
	for hh, r := range rec.Revoked {
		delete(c.tokens, hh)
		c.revoked[hh] = r.reason(task)
	}
	if rotate {
		c.tokens[h] = tokenOwner{Task: task, Client: client}
	}
	c.mu.Unlock()
	what := "revoked"
	if rotate {
		what = "rotated"
	} else {
		tok = ""
	}
	c.cfg.Logf("task %s: client %s's token %s by the operator", task, client, what)
	return tok, nil
}

// reviseToken replaces client's token hash in rs by h; for a revocation
// (not rotate) h's token is thrown away, so nobody holds one.
func reviseToken(rs roundStore, task, client, h string, rotate bool, now time.Time) (taskRecord, error) {
	return rs.replaceClientToken(task, client, h, rotate, now)
}

// RevokeToken revokes (or, rotate, replaces) the token of client on task in
// a store no server holds, returning the new token when rotating.
func (s *Store) RevokeToken(task, client string, rotate bool, now time.Time) (string, error) {
	tok := NewToken()
	if _, err := reviseToken(s, task, client, HashToken(tok), rotate, now); err != nil {
		return "", err
	}
	if !rotate {
		return "", nil
	}
	return tok, nil
}
