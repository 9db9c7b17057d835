#!/usr/bin/env bash
# Federate your own problem, end to end: MountainCar (numpy dynamics, per-client physics) as a fedirl
# "lattice" task; three clients (client0 in Python, client1 and client2 with `fedirl client`); mean and
# barycentric fusion on a real `fedirl server` on loopback; prints each client's planner return under its
# local, the mean and the barycentric reward.
#
#   examples/own-problem/run.sh [OUT]         (default OUT: a new temporary folder)
#
# Environment: PYTHON (default /usr/bin/python3, needs numpy, grpcio, grpcio-tools), FEDIRL_BIN (default:
# built from this checkout with go build), N (lattice points per state axis, default 31), EPISODES (expert
# demonstrations per client, 20), EVAL_EPISODES (evaluation rollouts per client and reward, 50).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-$(mktemp -d -t fedirl-own-problem-XXXXXX)}
mkdir -p "$out"
out=$(cd "$out" && pwd)
py=${PYTHON:-/usr/bin/python3}
if ! "$py" -c "import numpy, grpc, grpc_tools" 2>/dev/null; then
	echo "run.sh: $py lacks numpy, grpcio or grpcio-tools (Debian: apt-get install python3-numpy python3-grpcio python3-grpc-tools; or set PYTHON)" >&2
	exit 1
fi
export PYTHONPATH="$root/python${PYTHONPATH:+:$PYTHONPATH}"
if [ -z "${FEDIRL_BIN:-}" ]; then
	(cd "$root" && go build -o "$out/fedirl" ./cmd/fedirl)
	FEDIRL_BIN="$out/fedirl"
fi
export FEDIRL_BIN
size=(--n "${N:-31}" --episodes "${EPISODES:-20}" --eval-episodes "${EVAL_EPISODES:-50}")

"$py" "$here/own_problem.py" prepare --out "$out" "${size[@]}"
store="$out/fed.db"
rm -f "$store" "$out/addr"
for m in mean barycentric; do
	"$FEDIRL_BIN" server task create --store "$store" --spec "$out/task-$m.json" \
		--clients client0,client1,client2 --tokens-out "$out/tokens-$m.json"
done
"$FEDIRL_BIN" server --store "$store" --listen 127.0.0.1:0 --insecure --addr-file "$out/addr" 2>"$out/server.log" &
server=$!
pids=()
cleanup() {
	for p in "${pids[@]}" "$server"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
}
trap cleanup EXIT
for _ in $(seq 200); do [ -s "$out/addr" ] && break; sleep 0.05; done
[ -s "$out/addr" ] || { echo "server did not start:"; cat "$out/server.log"; exit 1; } >&2
addr=$(cat "$out/addr")
echo "fedirl server on $addr (store $store)" >&2

client_files=([1]="--mdp $out/client1/mdp.npz --demos $out/client1/demos.jsonl"
	[2]="--mdp $out/client2/mdp.json --demos $out/client2/demos.npz")
for c in 1 2; do
	for m in mean barycentric; do
		# shellcheck disable=SC2086 # the file flags are split on purpose
		"$FEDIRL_BIN" client --server "$addr" --insecure --task "mc-$m" --id "client$c" \
			--token-file "$out/tokens-$m.json" ${client_files[$c]} --out "$out/client$c/$m.json" \
			--timeout 2m --quiet &
		pids+=($!)
	done
done
"$py" "$here/own_problem.py" client --out "$out" --server "$addr" "${size[@]}"
for p in "${pids[@]}"; do wait "$p"; done
pids=()
"$py" "$here/own_problem.py" evaluate --out "$out" "${size[@]}"
echo "outputs in $out (returns.txt, returns.json, per-client folders)" >&2
