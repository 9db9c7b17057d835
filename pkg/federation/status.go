package federation

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// This file pages the operator's status (issue 53: one unfiltered reply of
// 8.1 MB for 9 tasks of 60,000 clients exceeded gRPC's 4 MiB limit, and
// the operator had no remote view at all). A page holds whole tasks, or
// slices of one task's clients, up to a number of client entries and a
// byte budget below the message limit; it can be filtered by task and by
// client.

// StatusQuery selects one page of the status (Coordinator.StatusPage).
type StatusQuery struct {
	Task   string // only this task ("" = every task)
	Client string // only this client's entries ("" = every client)
	// PageToken continues after the previous page ("" = the first page).
	PageToken string
	// PageSize is the most clients (of all tasks) one page lists (0 =
	// DefaultStatusPageSize; at most MaxStatusPageSize).
	PageSize int
	// MaxBytes bounds a page's estimated encoded size (0 =
	// DefaultStatusPageBytes); the gRPC adapter sets it below its send
	// limit.
	MaxBytes int
}

// Paging defaults of StatusQuery.
const (
	DefaultStatusPageSize  = 50000
	MaxStatusPageSize      = 100000
	DefaultStatusPageBytes = 2 << 20
)

// statusCursor is where a page starts: a task and an offset into its
// sorted clients.
type statusCursor struct {
	task   string
	offset int
}

func (c statusCursor) token() string {
	return base64.RawURLEncoding.EncodeToString([]byte(c.task + "\x00" + strconv.Itoa(c.offset)))
}

func parseStatusToken(tok string) (statusCursor, error) {
	if tok == "" {
		return statusCursor{}, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(tok)
	task, off, ok := strings.Cut(string(b), "\x00")
	n, err2 := strconv.Atoi(off)
	if err != nil || !ok || err2 != nil || n < 0 || !ValidID(task) {
		return statusCursor{}, errorf(CodeInvalidArgument, "page token %q is not one this server issued", truncate(tok))
	}
	return statusCursor{task, n}, nil
}

// StatusPage returns one page of the status selected by q and the token of
// the next page ("" after the last). It needs the admin token as Status
// does.
func (c *Coordinator) StatusPage(ctx context.Context, cred Credentials, q StatusQuery) ([]TaskStatus, string, error) {
	if err := c.checkStatusAccess(cred); err != nil {
		return nil, "", err
	}
	switch {
	case q.PageSize < 0 || q.PageSize > MaxStatusPageSize:
		return nil, "", errorf(CodeInvalidArgument, "page size %d: want 0 (the default, %d) to %d", q.PageSize, DefaultStatusPageSize, MaxStatusPageSize)
	case q.Task != "" && !ValidID(q.Task):
		return nil, "", errorf(CodeInvalidArgument, "task id %q is not a valid identifier", truncate(q.Task))
	case q.Client != "" && !ValidID(q.Client):
		return nil, "", errorf(CodeInvalidArgument, "client id %q is not a valid identifier", truncate(q.Client))
	}
	if q.PageSize == 0 {
		q.PageSize = DefaultStatusPageSize
	}
	if q.MaxBytes <= 0 {
		q.MaxBytes = DefaultStatusPageBytes
	}
	cur, err := parseStatusToken(q.PageToken)
	if err != nil {
		return nil, "", err
	}
	var ids []string
	if q.Task != "" {
		ids = []string{q.Task}
	} else {
		tasks, err := c.store.listTasks()
		if err != nil {
			return nil, "", internal(err)
		}
		for _, t := range tasks {
			ids = append(ids, t.ID)
		}
	}
	start, _ := slices.BinarySearch(ids, cur.task)
	if q.PageToken != "" && (start == len(ids) || ids[start] != cur.task) {
		cur.offset = 0 // the task was deleted meanwhile: continue with the next one
	}
	var page []TaskStatus
	entries, bytes := 0, 0
	for i := start; i < len(ids); i++ {
		if err := ctx.Err(); err != nil {
			return nil, "", errorf(CodeUnavailable, "status cancelled: %v", err)
		}
		ts, found, err := c.store.status(ids[i])
		if err != nil {
			return nil, "", internal(err)
		}
		if !found {
			if q.Task != "" {
				return nil, "", errorf(CodeNotFound, "unknown task %q", truncate(q.Task))
			}
			continue
		}
		c.addLive(&ts)
		off := 0
		if i == start {
			off = cur.offset
		}
		slice, n, sz, more := sliceStatus(ts, q.Client, off, q.PageSize-entries, q.MaxBytes-bytes)
		if n == 0 && len(page) > 0 && more {
			// Nothing of this task fits beside what the page holds.
			return page, statusCursor{ids[i], off}.token(), nil
		}
		page = append(page, slice)
		entries, bytes = entries+n, bytes+sz
		if more {
			return page, statusCursor{ids[i], off + n}.token(), nil
		}
		if entries >= q.PageSize || bytes >= q.MaxBytes {
			if i+1 < len(ids) {
				return page, statusCursor{ids[i+1], 0}.token(), nil
			}
		}
	}
	return page, "", nil
}

// checkStatusAccess is Status's access rule.
func (c *Coordinator) checkStatusAccess(cred Credentials) error {
	if c.cfg.AdminToken == "" && !c.cfg.OpenStatus {
		return errorf(CodePermissionDenied, "this server has no admin token; read its status offline with \"fedirl server status --store\"")
	}
	if c.cfg.AdminToken != "" && !c.isAdmin(cred) {
		return errorf(CodeUnauthenticated, "status requires the admin token")
	}
	return nil
}

// addLive adds what only the running coordinator knows to a task's stored
// status: the clients seen since start, the last fusion error, the
// round's deadline.
func (c *Coordinator) addLive(ts *TaskStatus) {
	c.mu.Lock()
	if ts.Round > 0 {
		ts.ClientsSeen = mergeSeen(ts.ClientsSeen, c.seen[ts.ID])
	}
	if ts.Error == "" {
		ts.Error = c.errs[ts.ID]
	}
	rec := c.tasks[ts.ID]
	c.mu.Unlock()
	if rec != nil && rec.Spec.DeadlineSeconds > 0 && !ts.Done {
		if st, err := c.store.state(ts.ID); err == nil && !st.FirstSubmission.IsZero() {
			ts.Deadline = st.FirstSubmission.Add(time.Duration(rec.Spec.DeadlineSeconds * float64(time.Second))).UTC()
		}
	}
}

// statusFixedBytes estimates the encoded size of a task's status without
// its per-client lists.
func statusFixedBytes(ts *TaskStatus) int {
	n := 64 + len(ts.ID) + len(ts.Error)
	for i := range ts.Fused {
		f := &ts.Fused[i]
		n += 128 + len(f.Method) + 9*(len(f.Theta)+len(f.Reward))
	}
	return n
}

// sliceStatus returns the part of ts a page holds: with client, only that
// client's entries; otherwise its sorted clients from offset on, as many
// as fit maxEntries and maxBytes (at least one, so that paging always
// advances). It returns the slice, the clients it lists, its estimated
// size and whether clients are left after it.
func sliceStatus(ts TaskStatus, client string, offset, maxEntries, maxBytes int) (TaskStatus, int, int, bool) {
	all := ts.ClientsAllowed
	ts.ClientsTotal = len(all)
	fixed := statusFixedBytes(&ts)
	keep := func(lo, hi int) TaskStatus {
		out := ts
		out.ClientsAllowed, out.ClientOffset = slices.Clone(all[lo:hi]), lo
		in := make(map[string]bool, hi-lo)
		for _, id := range out.ClientsAllowed {
			in[id] = true
		}
		out.ClientsSeen = filterIDs(ts.ClientsSeen, in)
		out.Fused = make([]FusedResult, len(ts.Fused))
		for i := range ts.Fused {
			out.Fused[i] = filterFused(ts.Fused[i], in, lo == 0)
		}
		return out
	}
	if client != "" {
		i, ok := slices.BinarySearch(all, client)
		if !ok {
			out := keep(0, 0)
			return out, 0, fixed, false
		}
		out := keep(i, i+1)
		return out, 1, fixed + 256, false
	}
	seen := make(map[string]bool, len(ts.ClientsSeen))
	for _, id := range ts.ClientsSeen {
		seen[id] = true
	}
	perFused := make([]map[string]bool, len(ts.Fused))
	for i := range ts.Fused {
		perFused[i] = make(map[string]bool, len(ts.Fused[i].Clients))
		for _, id := range ts.Fused[i].Clients {
			perFused[i][id] = true
		}
	}
	size := fixed
	hi := min(offset, len(all))
	for hi < len(all) && hi-offset < maxEntries {
		id := all[hi]
		b := len(id) + 3
		if seen[id] {
			b += len(id) + 3
		}
		for i := range ts.Fused {
			if perFused[i][id] {
				b += len(id) + 3 + 9 + 9 + 64 // id, weight, score, privacy declaration
			}
		}
		if size+b > maxBytes && hi > offset {
			break
		}
		size += b
		hi++
	}
	return keep(min(offset, len(all)), hi), hi - min(offset, len(all)), size, hi < len(all)
}

// filterIDs returns the ids of ids in in, in order.
func filterIDs(ids []string, in map[string]bool) []string {
	var out []string
	for _, id := range ids {
		if in[id] {
			out = append(out, id)
		}
	}
	return out
}

// filterFused returns f with its per-client lists restricted to the
// clients in in; the fused reward is kept only on the first slice (first).
func filterFused(f FusedResult, in map[string]bool, first bool) FusedResult {
	out := f
	out.Clients, out.Weights, out.OutlierScores, out.Privacy = nil, nil, nil, nil
	for i, id := range f.Clients {
		if !in[id] {
			continue
		}
		out.Clients = append(out.Clients, id)
		out.Weights = append(out.Weights, f.Weights[i])
		if f.OutlierScores != nil {
			out.OutlierScores = append(out.OutlierScores, f.OutlierScores[i])
		}
		if f.Privacy != nil {
			out.Privacy = append(out.Privacy, f.Privacy[i])
		}
	}
	out.RewardClients = filterIDs(f.RewardClients, in)
	if !first {
		out.Reward = nil
	}
	return out
}

// MergeStatusPages joins the pages of a paged status (in order) into one
// TaskStatus per task, as Status returns them.
func MergeStatusPages(pages [][]TaskStatus) []TaskStatus {
	var out []TaskStatus
	for _, page := range pages {
		for _, ts := range page {
			if n := len(out); n > 0 && out[n-1].ID == ts.ID {
				last := &out[n-1]
				last.ClientsAllowed = append(last.ClientsAllowed, ts.ClientsAllowed...)
				last.ClientsSeen = append(last.ClientsSeen, ts.ClientsSeen...)
				for i := range min(len(last.Fused), len(ts.Fused)) {
					a, b := &last.Fused[i], &ts.Fused[i]
					a.Clients = append(a.Clients, b.Clients...)
					a.Weights = append(a.Weights, b.Weights...)
					a.OutlierScores = append(a.OutlierScores, b.OutlierScores...)
					a.Privacy = append(a.Privacy, b.Privacy...)
					a.RewardClients = append(a.RewardClients, b.RewardClients...)
				}
				continue
			}
			ts.ClientOffset = 0
			out = append(out, ts)
		}
	}
	return out
}

// String names a page for errors.
func (q StatusQuery) String() string {
	return fmt.Sprintf("status page (task %q, client %q, size %d)", q.Task, q.Client, q.PageSize)
}
