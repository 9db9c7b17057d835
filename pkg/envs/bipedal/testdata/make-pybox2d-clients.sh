#!/bin/sh
# make-pybox2d-clients.sh regenerates pybox2d-clients.json.gz: the fleet
# episodes of clientCases (cppsetup_test.go) simulated by pybox2d itself,
# through bench/bipedal/pybox2d_walker.py (the walker's world on pybox2d's
# API), from the terrain, push and actions the Go port writes.
# Usage (from the repository root): sh pkg/envs/bipedal/testdata/make-pybox2d-clients.sh PYBOX2D_BUILD_LIB
# PYBOX2D_BUILD_LIB: pybox2d's build/lib.* folder ("python3 setup.py build" in a checkout).
set -e
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
BIPEDAL_CLIENT_SETUPS=$tmp go test ./pkg/envs/bipedal -run WriteClientSetups -count=1 >/dev/null
PYTHONPATH=$1 python3 bench/bipedal/pybox2d_walker.py --record "$tmp"/*.txt | gzip -9 -n > pkg/envs/bipedal/testdata/pybox2d-clients.json.gz
