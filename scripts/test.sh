#!/usr/bin/env bash
# scripts/test.sh — install what is missing, build everything, run every test
# through CTest (both the float and the double test binaries).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
attograd_install_packages
attograd_build
build="${ATTOGRAD_BUILD_DIR:-build}"

# CTest learns the test cases by asking each Catch binary for its list. A name
# CMake cannot carry (one with `;` or an unmatched `[`) would silently merge
# the cases after it into one entry that runs none of them, so check first
# that CTest knows every case.
# (Catch 2 exits with the number of listed cases, hence the `|| true`.)
# (Each binary's test spec, e.g. ~[f64] for the float one, is written by
# tests/CMakeLists.txt beside it.)
float_cases=$("$build/tests/attograd_tests" "$(cat "$build/tests/attograd_tests.spec")" \
  --list-test-names-only || true)
double_cases=$("$build/tests/attograd_tests_f64" "$(cat "$build/tests/attograd_tests_f64.spec")" \
  --list-test-names-only || true)
catch_cases=$(($(grep -c . <<<"$float_cases") + $(grep -c . <<<"$double_cases")))
ctest_cases=$(ctest --test-dir "$build" -N | sed -n 's/^Total Tests: //p')
if [[ "$catch_cases" != "$ctest_cases" ]]; then
  echo "error: CTest registered $ctest_cases tests but the Catch binaries list $catch_cases;" \
    "a test name likely contains ';' or '[' (rename it)" >&2
  exit 1
fi

ctest --test-dir "$build" --output-on-failure -j "$(nproc)"
