#!/usr/bin/env bash
# The issue-25 attack on a real "fedirl server" process, at full size, on
# loopback only: one peer (127.0.0.2) holds CONNS connections × STREAMS
# token-less calls whose request is never finished, reconnecting dropped
# connections after RECONNECT, while a client on 127.0.0.1 opens a new
# connection every second and calls GetTask (each must be answered within
# 5 s). It reports the server's RSS before, at the peak of the attack and
# after the attacker leaves, then repeats the attack and measures how long
# the server takes to exit after SIGTERM with the stalled calls still open.
#
#   bench/federation-attack.sh [extra "fedirl server" flags...]
#   CONNS=2048 STREAMS=16 HOLD=30s RECONNECT=1s AFTER=30 bench/federation-attack.sh
#
# Extra flags go to the server, e.g. --max-connections-per-peer 2048 to let
# the attacker hold every place (fair eviction then keeps room for others).
set -euo pipefail
CONNS=${CONNS:-2048} STREAMS=${STREAMS:-16} HOLD=${HOLD:-30s} RECONNECT=${RECONNECT:-1s} AFTER=${AFTER:-30}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'kill $srv $atk 2>/dev/null || true; rm -rf "$work"' EXIT
cd "$root"
go build -o "$work/fedirl" ./cmd/fedirl
go test -c -o "$work/federation.test" ./pkg/federation
"$work/fedirl" server task create --store "$work/fed.db" --id t --gridworld-size 5 --clients alice --tokens-out "$work/tokens.json" 2>/dev/null
token=$(sed -n 's/.*"alice": "\(.*\)".*/\1/p' "$work/tokens.json")
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"

rss() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; } # kB

start_server() {
	rm -f "$work/addr"
	"$work/fedirl" server --insecure --listen 127.0.0.1:0 --store "$work/fed.db" --addr-file "$work/addr" "$@" 2>>"$work/server.log" &
	srv=$!
	while [ ! -s "$work/addr" ]; do sleep 0.1; done
	addr=$(cat "$work/addr")
}

start_attack() {
	FEDIRL_ATTACK_ADDR=$addr FEDIRL_ATTACK_TOKEN=$token FEDIRL_ATTACK_CONNS=$CONNS FEDIRL_ATTACK_STREAMS=$STREAMS \
		FEDIRL_ATTACK_HOLD=$1 FEDIRL_ATTACK_RECONNECT=$RECONNECT \
		"$work/federation.test" -test.run '^TestAttackExternal$' -test.v -test.timeout 10m >"$work/attack.log" 2>&1 &
	atk=$!
	while ! grep -q '^holding' "$work/attack.log"; do
		kill -0 $atk 2>/dev/null || { cat "$work/attack.log"; exit 1; }
		sleep 0.2
	done
}

start_server "$@"
sleep 2
rss0=$(rss $srv)
start_attack "$HOLD"
peak=$rss0
while kill -0 $atk 2>/dev/null; do
	r=$(rss $srv)
	[ "$r" -gt "$peak" ] && peak=$r
	sleep 1
done
wait $atk && atkstatus=ok || atkstatus=FAILED
grep -E '^(holding|summary)|FAIL|under attack' "$work/attack.log" || true
sleep 5
rss5=$(rss $srv)
sleep "$AFTER"
rssN=$(rss $srv)
echo "server RSS: start $((rss0 / 1024)) MB, peak under attack $((peak / 1024)) MB (+$(((peak - rss0) / 1024)) MB), 5 s after the attacker left $((rss5 / 1024)) MB, $((AFTER + 5)) s after $((rssN / 1024)) MB; clients: $atkstatus"

start_attack 60s
t0=$(date +%s.%N)
kill -TERM $srv
wait $srv || true
t1=$(date +%s.%N)
kill $atk 2>/dev/null || true
echo "SIGTERM with the attack in place: the server exited after $(echo "$t1 - $t0" | bc) s"
grep -E 'shutting down|closed the connections|stopped in' "$work/server.log" || true
echo "audit log: $(grep -c 'msg=refused' "$work/server.log") refusal records, $(grep -c 'audit records dropped' "$work/server.log") summaries, $(wc -c <"$work/server.log") bytes of server log in total"
grep 'audit records dropped' "$work/server.log" | tail -2
