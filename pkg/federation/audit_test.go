package federation

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	bolt "go.etcd.io/bbolt"
)

// TestAuditLogIsRateLimited: 20,000 refusals within 3 s (the issue's
// 20,000 bad-token calls, which wrote 4.36 MB) leave at most burst + rate·3 s
// records, a few kB, and one summary record with the dropped count.
func TestAuditLogIsRateLimited(t *testing.T) {
	var logs lockedBuffer
	a := NewAuditLog(slogTo(&logs), DefaultAuditRate, DefaultAuditBurst)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a.now = func() time.Time { return now }
	for i := range 20000 {
		now = now.Add(150 * time.Microsecond) // 20,000 calls in 3 s
		a.Refused("Unauthenticated", fmt.Sprintf("127.0.0.2:%d", 1024+i%50000), "/fedirl.v1.Federation/GetTask", "invalid token for client alice on task t")
	}
	kept := strings.Count(logs.String(), "msg=refused")
	maxKept := DefaultAuditBurst + 3*DefaultAuditRate + 1
	if kept > maxKept || kept < DefaultAuditBurst {
		t.Fatalf("%d records kept, want %d..%d", kept, DefaultAuditBurst, maxKept)
	}
	if d := a.Flush(); d != 20000-kept {
		t.Fatalf("Flush reports %d dropped, want %d", d, 20000-kept)
	}
	out := logs.String()
	if !strings.Contains(out, fmt.Sprintf(`msg="audit records dropped" dropped=%d by_class="Unauthenticated=%d"`, 20000-kept, 20000-kept)) {
		t.Fatalf("no summary record:\n%s", out)
	}
	t.Logf("20,000 refusals in 3 s: %d records, %d bytes of log", kept, len(out))
	if len(out) > 8<<10 {
		t.Fatalf("%d bytes of audit log, want at most 8 kB", len(out))
	}
	if a.Flush() != 0 || strings.Count(logs.String(), "audit records dropped") != 1 {
		t.Fatal("a second flush with nothing dropped wrote a summary")
	}
}

// TestAuditLogCoversRefusalClasses: every kind of refused call leaves an
// audit record naming its class (the issue found only authentication
// failures logged).
func TestAuditLogCoversRefusalClasses(t *testing.T) {
	f := newFixture(t, CoordinatorConfig{})
	tok := f.create(t, testSpec("t", 2, 2), "alice", "bob")
	f.create(t, testSpec("broken", 2, 1), "carol")
	tokBroken := f.create(t, testSpec("broken2", 2, 1), "dave")
	if err := f.store.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketState).Put([]byte("broken2"), sealRecord("state", []byte("broken2"), []byte("{not json")))
	}); err != nil {
		t.Fatal(err)
	}
	var logs lockedBuffer
	audit := NewAuditLog(slogTo(&logs), 1000, 1000)
	addr, _ := limitedServer(t, f, ConnLimits{}, GRPCServerConfig{Audit: audit, MaxMessageBytes: 4096})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	alice := dial(t, addr, DialConfig{Token: tok["alice"]})
	alice.Submit(ctx, sub("t", "alice", 1, 1, 2))
	alice.Submit(ctx, sub("t", "alice", 1, 1, 3))                                       // AlreadyExists: a different θ replayed
	alice.Submit(ctx, sub("t", "alice", 1, 1))                                          // InvalidArgument: dimension
	alice.Submit(ctx, sub("t", "alice", 2, 1, 2))                                       // FailedPrecondition: future round
	alice.GetTask(ctx, "t", "bob")                                                      // Unauthenticated: another client's id
	alice.GetTask(ctx, "t", strings.Repeat("x", 5000))                                  // ResourceExhausted: over --max-message-bytes
	alice.CreateTask(ctx, testSpec("new", 1, 1), []string{"a"})                         // PermissionDenied: no admin token
	dial(t, addr, DialConfig{Token: "guess"}).GetTask(ctx, "t", "alice")                // no known token: refused at the headers
	dial(t, addr, DialConfig{Token: tokBroken["dave"]}).GetTask(ctx, "broken2", "dave") // Internal: round state unreadable
	for _, class := range []string{"AlreadyExists", "InvalidArgument", "FailedPrecondition", "Unauthenticated",
		"ResourceExhausted", "PermissionDenied", "Internal", AuditStreamNoCred} {
		eventually(t, "an audit record of class "+class, func() bool { return strings.Contains(logs.String(), "class="+class+" ") })
	}
}

// TestCorruptTaskRecordReportedAtStartup: a store with one task record that
// cannot be decoded. The server logs it at start-up, the metrics count it as
// corrupt (the issue saw it counted "open"), and callers, with or without
// the task's tokens, get the same Unauthenticated answer as for an unknown
// task, without the store's error text.
func TestCorruptTaskRecordReportedAtStartup(t *testing.T) {
	f := newFixture(t, CoordinatorConfig{})
	tokBad := f.create(t, testSpec("bad", 2, 1), "alice")
	tokGood := f.create(t, testSpec("good", 2, 1), "alice")
	if err := f.store.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketTasks).Put([]byte("bad"), sealRecord("tasks", []byte("bad"), []byte(`{"spec": {"id": "bad", "theta_dim": -1}, "clients": 7}`)))
	}); err != nil {
		t.Fatal(err)
	}
	f.close()
	var lines []string
	m := NewMetrics()
	f.open(t, CoordinatorConfig{Metrics: m, Logf: func(format string, args ...any) { lines = append(lines, fmt.Sprintf(format, args...)) }})
	if len(lines) == 0 || !strings.Contains(lines[0], "task bad: corrupt record at start-up") {
		t.Fatalf("start-up log %q does not report the corrupt task", lines)
	}
	if c := f.coord.Corrupt(); len(c) != 1 || c["bad"] == "" {
		t.Fatalf("Corrupt() = %v", c)
	}
	reg := prometheus.NewRegistry()
	if err := m.Register(reg); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`fedirl_tasks{state="corrupt"} 1`, `fedirl_tasks{state="open"} 1`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	addr := serve(t, f, GRPCServerConfig{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, errUnknown := dial(t, addr, DialConfig{Token: tokGood["alice"]}).GetTask(ctx, "nosuch", "alice")
	for name, token := range map[string]string{"no token": "", "a wrong token": "guess", "another task's token": tokGood["alice"], "the task's own token": tokBad["alice"]} {
		_, err := dial(t, addr, DialConfig{Token: token}).GetTask(ctx, "bad", "alice")
		if CodeOf(err) != CodeUnauthenticated {
			t.Errorf("%s: %v, want Unauthenticated", name, err)
		}
		for _, leak := range []string{"corrupt", "store", "json", "theta_dim", "record"} {
			if strings.Contains(err.Error(), leak) {
				t.Errorf("%s: the answer %q shows the store (%q)", name, err, leak)
			}
		}
		if token == tokGood["alice"] && strings.Replace(err.Error(), "bad", "nosuch", 1) != errUnknown.Error() {
			t.Errorf("corrupt task answered %q, unknown task %q", err, errUnknown)
		}
	}
	var sts []TaskStatus
	sts, _ = f.coord.Status(ctx, Credentials{})
	b, _ := json.Marshal(sts)
	if !strings.Contains(string(b), "corrupt task record") {
		t.Errorf("the operator's status does not name the corrupt record: %s", b)
	}
}
