#!/bin/sh
# run.sh: BipedalWalker-v3's step on fedirl's Go port, on pybox2d and on
# Box2D 2.3's C++ core (the one pybox2d wraps), the same work for all three:
# the 16 Gymnasium reference episodes' actions replayed (5,963 steps), timed
# in process CPU time (a shared machine's wall time includes other
# processes' turns), measured back to back in one run.
#
# Usage: sh bench/bipedal/run.sh PYBOX2D_SRC [REPEATS]
#   PYBOX2D_SRC: a checkout of github.com/pybox2d/pybox2d (commit 09643321 was
#   used for the reference episodes), built in place with
#   "python3 setup.py build" (needs swig and python3-dev).
# Prints one line per engine and the ratios to the Go port.
set -e
src=$(cd "$1" && pwd)
repeats=${2:-3}
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
BIPEDAL_CPP_SETUPS=$tmp go test ./pkg/envs/bipedal -run WriteCppSetups -count=1 >/dev/null

# Box2D C++ from pybox2d's tree, compiled as pybox2d's setup.py compiles it (-O2).
mkdir -p "$tmp/obj"
(cd "$tmp/obj" && g++ -O2 -fPIC $(python3-config --includes) -I"$src" -c $(find "$src/Box2D" -name '*.cpp' | grep -v -i swig))
g++ -O2 $(python3-config --includes) -I"$src" bench/bipedal/walker.cpp "$tmp"/obj/*.o $(python3-config --ldflags --embed) -o "$tmp/walker"

lib=$(dirname "$(find "$src/build" -name '_Box2D*.so' | head -1)")
lib=$(dirname "$lib")
cpp_ns=0; cpp_steps=0; py_ns=0; py_steps=0
for s in "$tmp"/*.txt; do
	sed -i '$ d' "$s"; echo "$repeats" >> "$s"  # the last line is the repeat count
	set -- $(nice -n 10 "$tmp/walker" < "$s" | tail -1)
	cpp_ns=$(python3 -c "print($cpp_ns + $2 * $4)"); cpp_steps=$((cpp_steps + $4))
	set -- $(PYTHONPATH=$lib nice -n 10 python3 bench/bipedal/pybox2d_walker.py "$s" 1)
	py_ns=$(python3 -c "print($py_ns + $2 * $4)"); py_steps=$((py_steps + $4))
done
go_ns=$(nice -n 10 go test ./pkg/envs/bipedal -run '^$' -bench 'StepReference$' -benchtime 20000x -cpu 1 -count 1 | awk '/BenchmarkStepReference/ {for (i = 1; i <= NF; i++) if ($i == "cpu-ns/step") print $(i-1)}')
python3 - "$go_ns" "$cpp_ns" "$cpp_steps" "$py_ns" "$py_steps" <<'PY'
import sys, platform
go = float(sys.argv[1]); cpp = float(sys.argv[2]) / int(sys.argv[3]); py = float(sys.argv[4]) / int(sys.argv[5])
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.processor())
print(f"CPU: {cpu}")
print(f"fedirl Go (box2d32)      {go/1000:8.1f} us CPU/step  1.00")
print(f"Box2D 2.3 C++ (-O2)      {cpp/1000:8.1f} us CPU/step  {cpp/go:.2f} x Go   ({sys.argv[3]} steps)")
print(f"pybox2d 2.3.10 (Python)  {py/1000:8.1f} us CPU/step  {py/go:.2f} x Go   ({sys.argv[5]} steps)")
PY
