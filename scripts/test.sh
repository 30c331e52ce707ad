#!/usr/bin/env bash
# scripts/test.sh — install what is missing, build everything, run every test
# through CTest (both the float and the double test binaries).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
attograd_install_packages
attograd_build
ctest --test-dir "${ATTOGRAD_BUILD_DIR:-build}" --output-on-failure -j "$(nproc)"
