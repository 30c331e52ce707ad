#!/usr/bin/env bash
# scripts/demo.sh — install what is missing, build, and run the main demos on
# the shipped data.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
attograd_install_packages
ATTOGRAD_TARGETS="${ATTOGRAD_TARGETS:-autograd_basics nw_regression}" attograd_build
build="${ATTOGRAD_BUILD_DIR:-build}"

echo
echo "== 1. Attention pooling as Nadaraya–Watson kernel regression (examples/nw_regression) =="
"$build/examples/nw_regression" --out out/nw_regression
echo "The pictures (fit vs truth, loss curve, attention heatmaps, kernel shapes) are in out/nw_regression/"

echo
echo "== 2. Reverse-mode autodiff on the micrograd expression (examples/autograd_basics) =="
"$build/examples/autograd_basics"
