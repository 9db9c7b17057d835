package federation

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// patternWatch is the Watch hoarder of TestSiegeExternal: the siege's
// connections, from one address, each hold 16 token-less health Watch
// streams.
const patternWatch = "watch"

// TestSiegeExternal is the attacker of bench/federation-siege.sh, which
// runs issue 35's full-size patterns on a real "fedirl server" process; it
// is skipped unless FEDIRL_SIEGE_ADDR names the server (a loopback
// address). It holds FEDIRL_SIEGE_CONNS (2048) connections from
// FEDIRL_SIEGE_ADDRS (2048) loopback addresses (127.10.0.1 onwards) in
// pattern FEDIRL_SIEGE_PATTERN (h2-stall, tls-stall, continuation, or
// watch: 16 Watch streams per connection; continuation sends up to
// FEDIRL_SIEGE_PAD, 15 MiB, of headers per connection), each reopened
// FEDIRL_SIEGE_RECONNECT (10ms) after the server closes it, for
// FEDIRL_SIEGE_HOLD (30s). Meanwhile, every second, an honest client opens
// a fresh connection, alternately from 127.0.0.1 and from 127.9.9.9 (an
// address the attacker never uses), and calls GetTask then Submit on task
// "t" as "alice" with token FEDIRL_SIEGE_TOKEN (over TLS when
// FEDIRL_SIEGE_CA names the server's CA, with FEDIRL_SIEGE_CERT and
// FEDIRL_SIEGE_KEY as its certificate for mutual TLS), within 5 s; and a
// fresh connection from 127.0.0.1 asks the health Check. It prints
// "holding" once the attack is in place and a "summary" line at the end;
// it fails when fewer than 95 % of the calls were served.
func TestSiegeExternal(t *testing.T) {
	addr := os.Getenv("FEDIRL_SIEGE_ADDR")
	if addr == "" {
		t.Skip("FEDIRL_SIEGE_ADDR not set (see bench/federation-siege.sh)")
	}
	pattern := os.Getenv("FEDIRL_SIEGE_PATTERN")
	conns, addrs := envOr(t, "FEDIRL_SIEGE_CONNS", 2048, strconv.Atoi), envOr(t, "FEDIRL_SIEGE_ADDRS", 2048, strconv.Atoi)
	hold := envOr(t, "FEDIRL_SIEGE_HOLD", 30*time.Second, time.ParseDuration)
	reconnect := envOr(t, "FEDIRL_SIEGE_RECONNECT", 10*time.Millisecond, time.ParseDuration)
	token := os.Getenv("FEDIRL_SIEGE_TOKEN")
	var tc *tls.Config
	if ca := os.Getenv("FEDIRL_SIEGE_CA"); ca != "" {
		var err error
		if tc, err = ClientTLSConfig(ca, os.Getenv("FEDIRL_SIEGE_CERT"), os.Getenv("FEDIRL_SIEGE_KEY")); err != nil {
			t.Fatal(err)
		}
	}
	var s *siege
	switch pattern {
	case patternH2Stall, patternTLSStall, patternContinuation:
		s = startSiege(t, addr, pattern, conns, addrs, siegeOptions{reconnect: reconnect, padBytes: envOr(t, "FEDIRL_SIEGE_PAD", 15<<20, strconv.Atoi)})
	case patternWatch:
		held := holdWatches(t, addr, conns)
		fmt.Printf("watchers: %d of %d Watch streams held\n", held, 16*conns)
	case patternTokenIdle, patternTokenStall:
		// Issue 53: a stolen token of FEDIRL_SIEGE_STOLEN_CLIENT on
		// FEDIRL_SIEGE_STOLEN_TASK (FEDIRL_SIEGE_STOLEN_TOKEN); token-stall
		// opens FEDIRL_SIEGE_STREAMS (16) stalled Submits per connection.
		s = startSiege(t, addr, pattern, conns, addrs, siegeOptions{reconnect: reconnect, token: tokenUse{
			token: os.Getenv("FEDIRL_SIEGE_STOLEN_TOKEN"), task: os.Getenv("FEDIRL_SIEGE_STOLEN_TASK"),
			client: os.Getenv("FEDIRL_SIEGE_STOLEN_CLIENT"), streams: envOr(t, "FEDIRL_SIEGE_STREAMS", 16, strconv.Atoi)}})
	default:
		t.Fatalf("FEDIRL_SIEGE_PATTERN %q: want %s, %s, %s, %s, %s or %s", pattern, patternH2Stall, patternTLSStall, patternContinuation, patternWatch, patternTokenIdle, patternTokenStall)
	}
	admin := os.Getenv("FEDIRL_SIEGE_ADMIN_TOKEN")
	statuses, statusOK := 0, 0
	time.Sleep(3 * time.Second)
	if s != nil {
		held, dials, closed := s.stats()
		fmt.Printf("holding: %s, attacker holds %d connections after %d dials (%d closed by the server)\n", pattern, held, dials, closed)
	} else {
		fmt.Printf("holding: %s\n", pattern)
	}
	served := map[string]int{}
	tried := map[string]int{}
	var lat []time.Duration
	checks, checked := 0, 0
	deadline := time.Now().Add(hold)
	for i := 0; time.Now().Before(deadline); i++ {
		from := []string{"127.0.0.1", "127.9.9.9"}[i%2]
		d, err := probe(addr, from, token, tc)
		tried[from]++
		if err != nil {
			fmt.Printf("probe %d from %s: %v after %v\n", i, from, err, d.Round(time.Millisecond))
		} else {
			served[from]++
			lat = append(lat, d)
		}
		if tc == nil {
			checks++
			if healthServing(addr) {
				checked++
			}
		}
		if admin != "" && tc == nil {
			statuses++
			if err := statusFrom(addr, "127.0.7.1", admin); err != nil {
				fmt.Printf("admin status: %v\n", err)
			} else {
				statusOK++
			}
		}
		time.Sleep(time.Second)
	}
	if admin != "" && s != nil && os.Getenv("FEDIRL_SIEGE_REVOKE") != "" {
		// The operator revokes the stolen token: how long until the
		// server has closed every connection the attacker held?
		held0, _, closed0 := s.stats()
		c, err := dialFrom(addr, "127.0.7.2", admin, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		start := time.Now()
		_, n, err := c.RevokeToken(ctx, os.Getenv("FEDIRL_SIEGE_STOLEN_TASK"), os.Getenv("FEDIRL_SIEGE_STOLEN_CLIENT"), Revoke)
		cancel()
		c.Close()
		if err != nil {
			t.Fatalf("revoke: %v", err)
		}
		took := time.Since(start)
		time.Sleep(time.Second)
		ok, total := 0, 0
		for i := range 6 {
			total++
			if _, err := probe(addr, []string{"127.0.0.1", "127.9.9.9"}[i%2], token, tc); err == nil {
				ok++
			}
		}
		held1, _, closed1 := s.stats()
		fmt.Printf("revoke: answered in %v, %d authenticated connections closed; the attacker held %d before and %d 1 s later (%d more closed by the server); %d/%d honest calls served after\n",
			took.Round(time.Microsecond), n, held0, held1, closed1-closed0, ok, total)
	}
	slices.Sort(lat)
	p50, worst := time.Duration(0), time.Duration(0)
	if len(lat) > 0 {
		p50, worst = lat[len(lat)/2], lat[len(lat)-1]
	}
	summary := fmt.Sprintf("summary: %s, %d conns over %d addresses: GetTask+Submit on fresh connections served %d/%d from 127.0.0.1, %d/%d from 127.9.9.9 (p50 %v, max %v); health Check SERVING %d/%d",
		pattern, conns, addrs, served["127.0.0.1"], tried["127.0.0.1"], served["127.9.9.9"], tried["127.9.9.9"],
		p50.Round(time.Microsecond), worst.Round(time.Microsecond), checked, checks)
	if s != nil {
		held, dials, closed := s.stats()
		summary += fmt.Sprintf("; attacker holds %d connections after %d dials (%d closed by the server)", held, dials, closed)
	}
	if statuses > 0 {
		summary += fmt.Sprintf("; admin status %d/%d", statusOK, statuses)
	}
	fmt.Println(summary)
	ok, total := served["127.0.0.1"]+served["127.9.9.9"], tried["127.0.0.1"]+tried["127.9.9.9"]
	if 100*ok < 95*total || 100*checked < 95*checks {
		t.Errorf("served %d/%d calls and %d/%d health Checks, want ≥ 95 %%", ok, total, checked, checks)
	}
}

// holdWatches opens conns plaintext connections from 127.10.0.1, each with
// 16 token-less health Watch streams kept open until the test ends, and
// returns how many the server let through.
func holdWatches(t *testing.T, addr string, conns int) int {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var mu sync.Mutex
	var wg sync.WaitGroup
	held := 0
	for range conns {
		c, err := dialFrom(addr, siegeAddr(0).String(), "", nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		hc := healthpb.NewHealthClient(c.conn)
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				w, err := hc.Watch(ctx, &healthpb.HealthCheckRequest{})
				if err == nil {
					_, err = w.Recv()
				}
				if err == nil {
					mu.Lock()
					held++
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	return held
}

// healthServing asks the health Check on a fresh plaintext connection from
// 127.0.0.1 and reports whether it answered SERVING within 5 s.
func healthServing(addr string) bool { return healthFrom(addr, "127.0.0.1") == nil }
