#!/usr/bin/env bash
# Writes OUT/summary.md from the fleet's run folders (run.sh OUT): per client
# and seed the mode policy's mean return over 100 episodes on its own
# physics (eval100.json), the episodes that fell (return < 0), the mean over
# the seeds, and the wall and CPU time of each training (time.txt).
#
#   examples/walker-fleet/summary.sh [OUT]     (default OUT: examples/walker-fleet/runs)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/runs}
clients=${CLIENTS:-0 1 2 3 4 5 6 7 8 9 10}
seeds=${SEEDS:-0 1 2}
{
	echo "# The walker fleet's experts"
	echo
	echo "RL Zoo's BipedalWalker-v3 preset (5e6 steps), one expert per client physics and seed; mean return of the"
	echo "mode policy over 100 episodes on its own physics (\`ppo eval --episodes 100 --seed 1000\`), the episodes"
	echo "that fell (return < 0) in brackets. Written by \`summary.sh\` from \`eval100.json\` and \`time.txt\`."
	echo
	printf '| client |'
	for s in $seeds; do printf ' seed %s |' "$s"; done
	echo ' mean over seeds | lowest seed | training wall / CPU time per seed (s) |'
	printf '|---|'
	for s in $seeds; do printf -- '---|'; done
	echo '---|---|---|'
	below=0 total=0
	for c in $clients; do
		printf '| %s |' "$c"
		means=() times=()
		for s in $seeds; do
			d="$out/client$c-seed$s"
			if [ ! -s "$d/eval100.json" ]; then
				printf ' – |'
				continue
			fi
			m=$(jq -r '.mean' "$d/eval100.json")
			f=$(jq -r '[.returns[] | select(. < 0)] | length' "$d/eval100.json")
			printf ' %.1f (%s) |' "$m" "$f"
			means+=("$m")
			times+=("$(awk '{printf "%.0f / %.0f", $1, $4}' "$d/time.txt")")
			total=$((total + 1))
			if awk -v m="$m" 'BEGIN{exit !(m < 200)}'; then below=$((below + 1)); fi
		done
		if [ ${#means[@]} -gt 0 ]; then
			printf '%s\n' "${means[@]}" | awk '{s += $1; if (NR == 1 || $1 < lo) lo = $1} END {printf " %.1f | %.1f |", s / NR, lo}'
		else
			printf ' – | – |'
		fi
		(IFS=,; printf ' %s |\n' "${times[*]:-–}" | sed 's/,/, /g')
	done
	echo
	echo "$((total - below)) of $total experts reach a mean return ≥ 200 on their own physics."
} >"$out/summary.md"
echo "wrote $out/summary.md"
