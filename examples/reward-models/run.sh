#!/usr/bin/env bash
# Clients that bring their own reward model, end to end: MountainCar (examples/own-problem's simulator, per-client
# physics) as a fedirl "lattice" task; client0 and client1 learn on their own RBF maps (9 x 9 and 3 x 3) with
# `fedirl client --submit-reward`, client2 is a small numpy neural network (reward_models.py client); each submits
# its reward on the task's probe points, never theta; three tasks fuse them (mean, normalized-mean, barycenter) on
# a real `fedirl server` on loopback; prints each client's planner return under its local and each fused reward.
#
#   examples/reward-models/run.sh [OUT]         (default OUT: a new temporary folder)
#
# Environment: PYTHON (default /usr/bin/python3, needs numpy, grpcio, grpcio-tools), FEDIRL_BIN (default: built
# from this checkout with go build), N (lattice points per state axis, default 31), EPISODES (expert
# demonstrations per client, 20), EVAL_EPISODES (evaluation rollouts per client and reward, 50).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-$(mktemp -d -t fedirl-reward-models-XXXXXX)}
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
methods=(mean normalized-mean barycenter)

"$py" "$here/reward_models.py" prepare --out "$out" "${size[@]}"
store="$out/fed.db"
rm -f "$store" "$out/addr"
for m in "${methods[@]}"; do
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

for c in 0 1; do
	for m in "${methods[@]}"; do
		"$FEDIRL_BIN" client --server "$addr" --insecure --task "rm-$m" --id "client$c" --submit-reward \
			--token-file "$out/tokens-$m.json" --mdp "$out/client$c/mdp.npz" --demos "$out/client$c/demos.jsonl" \
			--out "$out/client$c/$m.json" --timeout 5m --quiet &
		pids+=($!)
	done
done
nn_tasks=()
for m in "${methods[@]}"; do nn_tasks+=(--task "rm-$m" --token-file "$out/tokens-$m.json"); done
"$py" "$here/reward_models.py" client --server "$addr" --insecure --id client2 "${nn_tasks[@]}" \
	--demos "$out/client2/demos.jsonl" --out "$out/client2/result.json" --timeout 300
for p in "${pids[@]}"; do wait "$p"; done
pids=()
"$py" "$here/reward_models.py" evaluate --out "$out" "${size[@]}"
echo "outputs in $out (returns.txt, returns.json, per-client folders)" >&2
