#!/usr/bin/env bash
# Every fusion method × attack × f (1 of 11, 3 of 13) through the federation's
# coordinator (federation.RunInProcess: the Coordinator, submission checks and
# RunClient of "fedirl server" and "fedirl client", in-process transport), at
# the server's default norm bounds, EPIC to the true reward on the grid world
# 10×10. The ten honest clients are made exactly as in
# ../shared/notes/federation-turn5.md §1:
#   fedirl gridworld export --size 10 --clients 10 --client i --seed 1
#   fedirl irl --iters 50 --l2 1e-3
# Results (results.md, .csv, .json) go to bench/robust/results (or $OUT).
#
#   nice -n 10 bench/robust/run.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-$root/bench/robust/results}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$root"
go build -o "$work/fedirl" ./cmd/fedirl
for i in $(seq 0 9); do
	"$work/fedirl" gridworld export --size 10 --clients 10 --client "$i" --seed 1 --out "$work/gw/c$i" >/dev/null
	"$work/fedirl" irl --spec "$work/gw/c$i/mdp.json" --demos "$work/gw/c$i/demos.jsonl" --iters 50 --l2 1e-3 \
		--out "$work/gw/c$i/theta.json" 2>/dev/null
done
go run ./bench/robust --gw "$work/gw" --out "$out" 2> "$out.log" || { tail -5 "$out.log"; exit 1; }
mv "$out.log" "$out/run.log"
echo "wrote $out/results.md"
