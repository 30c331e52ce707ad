#!/usr/bin/env bash
# scripts/demo.sh — install what is missing, build, and run the main demos on
# the shipped data.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
attograd_install_packages
ATTOGRAD_TARGETS="${ATTOGRAD_TARGETS:-autograd_basics}" attograd_build
build="${ATTOGRAD_BUILD_DIR:-build}"

echo
echo "== 1. Reverse-mode autodiff on the micrograd expression (examples/autograd_basics) =="
"$build/examples/autograd_basics"
