#!/usr/bin/env bash
# scripts/test.sh — install what is missing, build the library, the example
# programs and the test binaries, run every test through CTest (both the float
# and the double test binaries).
#
# The benchmarks are not built (no test runs them): ATTOGRAD_CMAKE_ARGS=
# -DATTOGRAD_BUILD_BENCH=ON builds them too. One binary or one tag, without
# the rest: README.md, "Building by hand".
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
attograd_install_packages
ATTOGRAD_CMAKE_ARGS="-DATTOGRAD_BUILD_BENCH=OFF ${ATTOGRAD_CMAKE_ARGS:-}" attograd_build
build="${ATTOGRAD_BUILD_DIR:-build}"

# The dispatch line: which kernels this build runs.
if [[ -x "$build/examples/autograd_basics" ]]; then
  attograd_dispatch_line "$build/examples/autograd_basics"
fi

# CTest learns the test cases by asking each Catch binary for its list. A name
# CMake cannot carry (one with `;` or an unmatched `[`) would silently merge
# the cases after it into one entry that runs none of them, so check first
# that CTest knows every case.
# (Catch 2 exits with the number of listed cases, hence the `|| true`.)
# (tests/CMakeLists.txt writes the list of test binaries, and each one's test
# spec, e.g. ~[f64] for the float one, beside them.)
catch_cases=0
while read -r binary; do
  [[ -n "$binary" ]] || continue
  cases=$("$build/tests/$binary" "$(cat "$build/tests/$binary.spec")" --list-test-names-only </dev/null || true)
  catch_cases=$((catch_cases + $(grep -c . <<<"$cases")))
done <"$build/tests/test_binaries.txt"
ctest_cases=$(ctest --test-dir "$build" -N | sed -n 's/^Total Tests: //p')
if [[ "$catch_cases" != "$ctest_cases" ]]; then
  echo "error: CTest registered $ctest_cases tests but the Catch binaries list $catch_cases;" \
    "a test name likely contains ';' or '[' (rename it)" >&2
  exit 1
fi

ctest --test-dir "$build" --output-on-failure -j "$(nproc)"
