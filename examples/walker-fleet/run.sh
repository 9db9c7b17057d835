#!/usr/bin/env bash
# The walker fleet's experts: RL Zoo's BipedalWalker-v3 preset (5e6 steps) trained with fedirl's PPO on
# each of the 11 client physics (`fedirl env list` shows them), three seeds each, then each mode policy
# evaluated over 100 episodes on its own physics. A run that is already there (its eval100.json exists)
# is skipped, so a killed fleet resumes; a killed training restarts from its beginning.
#
#   examples/walker-fleet/run.sh [OUT]     (default OUT: examples/walker-fleet/runs)
#
# Environment: FEDIRL_BIN (default: built from this checkout), JOBS (trainings in parallel, default 2:
# each is single-threaded, about 7–8 CPU-min on a Zen 3 or Xeon core), CLIENTS (default "0 1 … 10"), SEEDS
# (default "0 1 2"). Afterwards `summary.sh OUT` writes OUT/summary.md.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-$here/runs}
mkdir -p "$out"
out=$(cd "$out" && pwd)
if [ -z "${FEDIRL_BIN:-}" ]; then
	(cd "$root" && go build -o "$out/fedirl" ./cmd/fedirl)
	FEDIRL_BIN="$out/fedirl"
fi
export FEDIRL_BIN out
one() {
	local c=$1 s=$2 dir="$out/client$1-seed$2"
	[ -s "$dir/eval100.json" ] && return 0
	rm -rf "$dir.partial"
	/usr/bin/time -f "%e s wall, %U s user CPU, %M kB peak RSS" -o "$dir.partial.time" \
		"$FEDIRL_BIN" ppo train --env BipedalWalker-v3 --client "$c" --seed "$s" --eval-every 250000 \
		--out "$dir.partial" >"$dir.partial.log" 2>&1
	"$FEDIRL_BIN" ppo eval --policy "$dir.partial/policy.json" --client "$c" --episodes 100 --seed 1000 \
		--out "$dir.partial/eval100.json" >>"$dir.partial.log" 2>&1
	# The policy's path as the run folder will hold it, not the .partial one.
	jq '.policy = "policy.json"' "$dir.partial/eval100.json" >"$dir.partial/eval100.json.tmp"
	mv "$dir.partial/eval100.json.tmp" "$dir.partial/eval100.json"
	mv "$dir.partial.time" "$dir.partial/time.txt"
	mv "$dir.partial.log" "$dir.partial/log.txt"
	rm -rf "$dir" && mv "$dir.partial" "$dir"
	echo "client $c seed $s: $(jq -r '"mean \(.mean)"' "$dir/eval100.json"), $(cat "$dir/time.txt")"
}
export -f one
for s in ${SEEDS:-0 1 2}; do for c in ${CLIENTS:-0 1 2 3 4 5 6 7 8 9 10}; do echo "$c $s"; done; done |
	xargs -P "${JOBS:-2}" -n 2 bash -c 'one "$0" "$1"'
