#!/usr/bin/env bash
# Every fusion method × attack × f (1 of 11, 3 of 13) through a real
# "fedirl server" on loopback (tasks created over gRPC with the admin token,
# every client federation.RunClient over its own gRPC connection, as
# "fedirl client" runs it), at the server's default norm bounds, EPIC to the
# true reward on the grid world 10×10. INPROCESS=1 runs the same cases through
# federation.RunInProcess (the same coordinator, in-process transport)
# instead. The ten honest clients are made exactly as in
# ../shared/notes/federation-turn5.md §1:
#   fedirl gridworld export --size 10 --clients 10 --client i --seed 1
#   fedirl irl --iters 50 --l2 1e-3
# Results (results.md, .csv, .json, run.log) go to bench/robust/results
# (bench/robust/results-inprocess with INPROCESS=1), or $OUT.
#
#   nice -n 10 bench/robust/run.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
if [ -n "${INPROCESS:-}" ]; then
	out=${OUT:-$root/bench/robust/results-inprocess}
else
	out=${OUT:-$root/bench/robust/results}
fi
work=$(mktemp -d)
srv=
trap '[ -n "$srv" ] && kill "$srv" 2>/dev/null; rm -rf "$work"' EXIT
cd "$root"
go build -o "$work/fedirl" ./cmd/fedirl
go build -o "$work/robust" ./bench/robust
for i in $(seq 0 9); do
	"$work/fedirl" gridworld export --size 10 --clients 10 --client "$i" --seed 1 --out "$work/gw/c$i" >/dev/null
	"$work/fedirl" irl --spec "$work/gw/c$i/mdp.json" --demos "$work/gw/c$i/demos.jsonl" --iters 50 --l2 1e-3 \
		--out "$work/gw/c$i/theta.json" 2>/dev/null
done
mkdir -p "$out"
args=()
if [ -z "${INPROCESS:-}" ]; then
	head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/admin.tok"
	# The connection limits are raised for the bench's one peer (127.0.0.1
	# opens 11–13 connections per task); the fusion options and norm bounds
	# are the server's defaults.
	"$work/fedirl" server --listen 127.0.0.1:0 --addr-file "$work/addr" --store "$work/fed.db" --init --insecure \
		--admin-token-file "$work/admin.tok" --peer-connect-rate 1000 --peer-connect-burst 1000 2>"$work/server.log" &
	srv=$!
	while [ ! -s "$work/addr" ]; do sleep 0.1; done
	args=(--server "$(cat "$work/addr")" --admin-token-file "$work/admin.tok")
fi
"$work/robust" --gw "$work/gw" --out "$out" "${args[@]}" 2>"$work/run.log" || { tail -5 "$work/run.log"; exit 1; }
cp "$work/run.log" "$out/run.log"
[ -n "$srv" ] && grep -c 'warning: outlier' "$work/server.log" | sed 's/^/server log lines with an outlier warning: /' >>"$out/run.log"
echo "wrote $out/results.md"
