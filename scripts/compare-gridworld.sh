#!/usr/bin/env bash
# Compares the grid-world study outputs of two run folders byte for byte:
# the proof that a refactoring changed no result.
#   scripts/compare-gridworld.sh REF_DIR NEW_DIR
set -euo pipefail
ref=$1 new=$2
status=0
for f in table1.md table1.csv table1.json table2.md table2.csv table2.json bounds.json figure2.png success.png; do
	if cmp -s "$ref/$f" "$new/$f"; then
		echo "same      $f"
	else
		echo "DIFFERENT $f"
		status=1
	fi
done
exit $status
