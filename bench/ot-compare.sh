#!/usr/bin/env bash
# ot-compare.sh: times one plain IBP barycenter iteration (scaling form, K = 6,
# ε = 0.5 squared spacings) with fedirl (BenchmarkIBPIter_* in pkg/ot), the C
# reference and numpy separable, on the same inputs in the same run, and prints
# a side-by-side Markdown table (ms per iteration, min / median of REPS runs,
# each (t(N2) − t(N1)) / (N2 − N1)) and the largest difference of fedirl's
# barycenter from the C reference's.
#
# The C column is ibp.c with its ld/st helpers as plain vector loads and stores
# (patched in the work folder): built verbatim with gcc 12.2, the memcpy-based
# helpers go through the stack (store-forwarding stalls) and run 3-10× slower
# than the README's figures, which the patched build reproduces. The verbatim
# build is timed too (column "C verbatim").
#
# usage: bench/ot-compare.sh [LATTICE ...]    (default: the lattices of the README's table)
# env:   REPS (3), OT_REF (the reference folder, default bench/ot-reference, a
#        committed copy of the project's reference), PYTHON (a python3 with numpy), KEEP=1 keeps the
#        work folder, NO_NUMPY=1 / NO_C=1 skip those columns.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
REPS=${REPS:-3}
ref=${OT_REF:-}
if [[ -z $ref ]]; then
	for c in "$root/bench/ot-reference"; do
		[[ -f $c/ibp.c ]] && ref=$c && break
	done
fi
[[ -n $ref && -f $ref/ibp.c ]] || { echo "ot-compare: no reference folder (set OT_REF)" >&2; exit 1; }
lats=("$@")
[[ ${#lats[@]} -gt 0 ]] || lats=(5x5x7x5x2 32x21x5 9x9x5x5x5 64x64 256x256 16x16x16x16 32x32x32x32)

py=${PYTHON:-}
if [[ -z $py ]]; then
	for c in python3 /usr/bin/python3; do
		if command -v "$c" >/dev/null && "$c" -c 'import numpy' 2>/dev/null; then py=$c; break; fi
	done
fi
[[ -n $py ]] || { echo "ot-compare: no python3 with numpy (apt-get install python3-numpy)" >&2; exit 1; }

work=$(mktemp -d)
[[ ${KEEP:-} == 1 ]] && echo "work folder: $work" >&2 || trap 'rm -rf "$work"' EXIT
mkdir -p "$work/data" "$work/res"
export OTB_DATA=$work/data OTB_RES=$work/res

cc=$(command -v gcc || command -v cc)
if [[ ${NO_C:-} != 1 ]]; then
	"$cc" -O3 -march=native -ffast-math -fopenmp "$ref/ibp.c" -o "$work/ibp-verbatim" -lm 2>/dev/null
	sed -e 's|static inline v8 ld(const double \*p){ v8 v; memcpy(&v, p, 64); return v; }|static inline v8 ld(const double *p){ return *(const v8 *)p; }|' \
		-e 's|static inline void st(double \*p, v8 v){ memcpy(p, &v, 64); }|static inline void st(double *p, v8 v){ *(v8 *)p = v; }|' \
		"$ref/ibp.c" >"$work/ibp.c"
	grep -q 'return \*(const v8 \*)p' "$work/ibp.c" || echo "ot-compare: could not patch ibp.c's ld/st; timing it verbatim" >&2
	"$cc" -O3 -march=native -ffast-math -fopenmp "$work/ibp.c" -o "$work/ibp" -lm 2>/dev/null
fi
(cd "$root" && go test -c -o "$work/ot.test" ./pkg/ot)

# stats "v1 v2 ..." -> "min / median"
stats() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{v[NR]=$1} END {if (NR==0) {print "—"; exit} printf "%.3f / %.3f", v[1], v[int((NR+1)/2)]}'; }
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{v[NR]=$1} END {if (NR==0) {print ""; exit} print v[int((NR+1)/2)]}'; }
field() { sed -n "s/.*$1=\([0-9.e+-]*\).*/\1/p"; }

printf '| lattice | n | N1→N2 | fedirl ms/iter | C ms/iter | C verbatim | numpy ms/iter | fedirl/C | numpy/fedirl | fedirl peak MB | max abs diff vs C |\n'
printf '|---|---|---|---|---|---|---|---|---|---|---|\n'
for lat in "${lats[@]}"; do
	n=$(echo "$lat" | tr x '\n' | awk 'BEGIN{p=1}{p*=$1}END{print p}')
	d=$((4000000 / n)); ((d < 2)) && d=2; ((d > 200)) && d=200
	n1=$((d / 4)); ((n1 < 1)) && n1=1; n2=$((n1 + d))
	[[ -f $OTB_DATA/$lat.mu ]] || "$py" "$ref/side.py" "$ref" gen "$lat" >/dev/null
	name="Lattice${lat}"
	g=() c=() cv=() p=() mem=()
	for ((r = 0; r < REPS; r++)); do
		out=$(cd "$root/pkg/ot" && OT_BENCH_DATA=$OTB_DATA OT_BENCH_ITERS="$n1,$n2" OT_BENCH_OUT=$OTB_RES \
			"$work/ot.test" -test.run '^$' -test.bench "^BenchmarkIBPIter_${name}\$" -test.benchtime 1x)
		g+=("$(echo "$out" | awk '/ms\/iter/ {for (i=1;i<=NF;i++) if ($(i+1)=="ms/iter") print $i}')")
		mem+=("$(echo "$out" | awk '/peak-MB/ {for (i=1;i<=NF;i++) if ($(i+1)=="peak-MB") print $i}')")
	done
	if [[ ${NO_C:-} != 1 ]]; then
		out=$("$work/ibp" "$lat" "$OTB_DATA/$lat.mu" "$n1" "$n2" "$REPS" "$OTB_RES/$lat.c.bar")
		c=("$(echo "$out" | field min_ms)" "$(echo "$out" | field med_ms)")
		out=$("$work/ibp-verbatim" "$lat" "$OTB_DATA/$lat.mu" "$n1" "$n2" "$REPS")
		cv=("$(echo "$out" | field min_ms)" "$(echo "$out" | field med_ms)")
	fi
	if [[ ${NO_NUMPY:-} != 1 ]]; then
		out=$("$py" "$ref/side.py" "$ref" np "$lat" "$n1" "$n2" "$REPS")
		p=($(echo "$out" | sed -n 's/.*all=\[\(.*\)\]/\1/p' | tr -d , | awk '{for (i=1;i<=NF;i++) printf "%g ", $i*1e3}'))
	fi
	gs=$(echo "${g[*]}" | stats); gm=$(echo "${g[*]}" | median)
	cs="—"; cm=""; [[ ${#c[@]} -gt 0 ]] && cs=$(printf '%.3f / %.3f' "${c[0]}" "${c[1]}") && cm=${c[1]}
	cvs="—"; [[ ${#cv[@]} -gt 0 ]] && cvs=$(printf '%.3f / %.3f' "${cv[0]}" "${cv[1]}")
	ps="—"; pm=""; [[ ${#p[@]} -gt 0 ]] && ps=$(echo "${p[*]}" | stats) && pm=$(echo "${p[*]}" | median)
	ratio() { [[ -n $1 && -n $2 ]] && awk -v a="$1" -v b="$2" 'BEGIN{printf "%.2f×", a/b}' || echo "—"; }
	diff="—"
	if [[ -f $OTB_RES/$lat.c.bar && -f $OTB_RES/$lat.go.bar ]]; then
		diff=$("$py" -c 'import numpy as np,sys; a=np.fromfile(sys.argv[1]); b=np.fromfile(sys.argv[2]); print("%.1e" % np.abs(a-b).max())' "$OTB_RES/$lat.go.bar" "$OTB_RES/$lat.c.bar")
	fi
	printf '| %s | %s | %s→%s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$lat" "$n" "$n1" "$n2" "$gs" "$cs" "$cvs" "$ps" \
		"$(ratio "$gm" "$cm")" "$(ratio "$pm" "$gm")" "$(echo "${mem[*]}" | tr ' ' '\n' | sort -g | tail -1)" "$diff"
done
