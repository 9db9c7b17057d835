#!/usr/bin/env bash
# Issue 35's distributed siege on a real "fedirl server" process, at full
# size, on loopback only. Each pattern runs against a fresh server: the
# attacker (TestSiegeExternal, pkg/federation/siege_external_test.go) binds
# each connection to its own loopback address (127.10.0.1 onwards) and
# reopens it 10 ms after the server closes it, while an honest client opens
# a fresh connection every second, alternately from 127.0.0.1 and from
# 127.9.9.9 (never used by the attacker), and calls GetTask then Submit
# (5 s deadline), and a fresh connection asks the health Check. The script
# prints the attacker's summary, the server's RSS (start and peak, from
# /proc) and its CPU time over the attack.
#
#   bench/federation-siege.sh                       # every pattern below
#   bench/federation-siege.sh h2-stall:2048:2048    # pattern:connections:addresses
#   HOLD=60s bench/federation-siege.sh continuation:128:8
#
# Patterns: h2-stall (HTTP/2 preface, SETTINGS and PINGs acknowledged,
# nothing else), tls-stall (65 bytes of a TLS record that never completes;
# TLS server), mtls-stall (the same against a server requiring client
# certificates), continuation (HEADERS without END_HEADERS, then up to
# 15 MiB of CONTINUATION frames of padding headers), watch (connections
# from one address, 16 token-less health Watch streams each), token-idle
# (issue 53: one complete GetTask with a stolen client token, then nothing)
# and token-stall (16 Submit streams per connection with the stolen token,
# each announcing 1 MiB and stalling). The stolen token is olduser's of task
# "old" (STOLEN=old, the default) or mallory's of task "t" (STOLEN=t);
# REVOKE=1 revokes it over the admin RPC after the hold and reports how fast
# the attack ends. Token patterns also ask the admin's status every second.
# Extra server flags: SERVER_FLAGS="--max-connections 4096" ...
# PROFILE=DIR also takes a 10 s CPU profile of the server 5 s into each
# attack (fedirl server --pprof on 127.0.0.1:${PPROF_PORT:-6061}) and
# writes it to DIR/PATTERN-CONNS-ADDRS.cpu.pprof (go tool pprof -top FILE).
set -euo pipefail
HOLD=${HOLD:-30s} RECONNECT=${RECONNECT:-10ms}
patterns=("$@")
[ ${#patterns[@]} -gt 0 ] || patterns=(h2-stall:2048:2048 h2-stall:16000:4096 tls-stall:2048:2048 mtls-stall:2048:2048 continuation:128:8 watch:4:1)
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
srv="" atk=""
trap 'kill $srv $atk 2>/dev/null || true; rm -rf "$work"' EXIT
cd "$root"
go build -o "$work/fedirl" ./cmd/fedirl
go test -c -o "$work/federation.test" ./pkg/federation
"$work/fedirl" server task create --store "$work/fed.db" --id t --gridworld-size 5 --clients alice,bob,mallory --tokens-out "$work/tokens.json" 2>/dev/null
"$work/fedirl" server task create --store "$work/fed.db" --id old --gridworld-size 5 --clients olduser --tokens-out "$work/old.json" 2>/dev/null
token=$(tr ',' '\n' <"$work/tokens.json" | sed -n 's/.*"alice": *"\([0-9a-f]*\)".*/\1/p')
case ${STOLEN:-old} in
old) stolen_task=old stolen_client=olduser stolen=$(sed -n 's/.*"olduser": *"\([0-9a-f]*\)".*/\1/p' "$work/old.json") ;;
t) stolen_task=t stolen_client=mallory stolen=$(tr ',' '\n' <"$work/tokens.json" | sed -n 's/.*"mallory": *"\([0-9a-f]*\)".*/\1/p') ;;
*) echo "STOLEN=$STOLEN: want old or t" >&2; exit 2 ;;
esac
openssl rand -hex 32 >"$work/admin.token"
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"

# A CA, a server certificate for 127.0.0.1 and a client certificate for alice.
(
	cd "$work"
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.crt -days 1 -subj /CN=siege-ca 2>/dev/null
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout server.key -out server.csr -subj /CN=server 2>/dev/null
	printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >server.ext
	openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out server.crt -days 1 -extfile server.ext 2>/dev/null
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout alice.key -out alice.csr -subj /CN=alice 2>/dev/null
	printf 'extendedKeyUsage=clientAuth\n' >alice.ext
	openssl x509 -req -in alice.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out alice.crt -days 1 -extfile alice.ext 2>/dev/null
)

rss() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }          # kB
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }                # clock ticks
tick=$(getconf CLK_TCK)

for p in "${patterns[@]}"; do
	IFS=: read -r pattern conns addrs <<<"$p"
	sec=(--insecure) env=()
	case $pattern in
	tls-stall) sec=(--tls-cert "$work/server.crt" --tls-key "$work/server.key" --admin-token-file "$work/admin.token")
		env=(FEDIRL_SIEGE_CA="$work/ca.crt") ;;
	mtls-stall) sec=(--tls-cert "$work/server.crt" --tls-key "$work/server.key" --client-ca "$work/ca.crt" --admin-token-file "$work/admin.token")
		env=(FEDIRL_SIEGE_CA="$work/ca.crt" FEDIRL_SIEGE_CERT="$work/alice.crt" FEDIRL_SIEGE_KEY="$work/alice.key")
		pattern=tls-stall ;;
	token-idle | token-stall) sec=(--insecure --admin-token-file "$work/admin.token")
		env=(FEDIRL_SIEGE_STOLEN_TOKEN="$stolen" FEDIRL_SIEGE_STOLEN_TASK="$stolen_task" FEDIRL_SIEGE_STOLEN_CLIENT="$stolen_client"
			FEDIRL_SIEGE_ADMIN_TOKEN="$(cat "$work/admin.token")" FEDIRL_SIEGE_REVOKE="${REVOKE:-}") ;;
	esac
	rm -f "$work/addr"
	prof=()
	[ -z "${PROFILE:-}" ] || prof=(--pprof "127.0.0.1:${PPROF_PORT:-6061}")
	# shellcheck disable=SC2086
	"$work/fedirl" server --listen 127.0.0.1:0 --store "$work/fed.db" --addr-file "$work/addr" "${sec[@]}" "${prof[@]}" ${SERVER_FLAGS:-} 2>"$work/server.log" &
	srv=$!
	while [ ! -s "$work/addr" ]; do
		kill -0 $srv 2>/dev/null || { echo "the server did not start:" >&2; cat "$work/server.log" >&2; exit 1; }
		sleep 0.1
	done
	sleep 1
	rss0=$(rss $srv) cpu0=$(cpu $srv) t0=$(date +%s.%N)
	env "${env[@]}" FEDIRL_SIEGE_ADDR="$(cat "$work/addr")" FEDIRL_SIEGE_TOKEN="$token" FEDIRL_SIEGE_PATTERN="$pattern" \
		FEDIRL_SIEGE_CONNS="$conns" FEDIRL_SIEGE_ADDRS="$addrs" FEDIRL_SIEGE_HOLD="$HOLD" FEDIRL_SIEGE_RECONNECT="$RECONNECT" \
		"$work/federation.test" -test.run '^TestSiegeExternal$' -test.v -test.timeout 20m >"$work/attack.log" 2>&1 &
	atk=$!
	if [ -n "${PROFILE:-}" ]; then
		mkdir -p "$PROFILE"
		(sleep 5 && curl -sS -o "$PROFILE/$pattern-$conns-$addrs.cpu.pprof" "http://127.0.0.1:${PPROF_PORT:-6061}/debug/pprof/profile?seconds=10") &
	fi
	peak=$rss0
	while kill -0 $atk 2>/dev/null; do
		r=$(rss $srv)
		[ "$r" -gt "$peak" ] && peak=$r
		sleep 0.5
	done
	wait $atk && status=ok || status=FAILED
	cpu1=$(cpu $srv) t1=$(date +%s.%N)
	echo "== $p ($status)"
	grep -E '^(watchers|holding|summary|revoke)|^probe |^admin status' "$work/attack.log" || tail -5 "$work/attack.log"
	echo "server RSS: start $((rss0 / 1024)) MB, peak $((peak / 1024)) MB; server CPU $(echo "scale=1; 100 * ($cpu1 - $cpu0) / $tick / ($t1 - $t0)" | bc) % of one core; machine load $(cut -d" " -f1-3 /proc/loadavg)"
	kill $srv
	wait $srv 2>/dev/null || true
	srv=""
	echo "audit log: $(grep -c 'msg=refused' "$work/server.log") records, $(grep -c 'audit records dropped' "$work/server.log") summaries of dropped records; the last:"
	{ grep 'audit records dropped' "$work/server.log" || true; } | tail -1 | sed 's/^.*dropped=/  dropped=/'
done
