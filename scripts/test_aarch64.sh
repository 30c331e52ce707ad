#!/usr/bin/env bash
# scripts/test_aarch64.sh — the float suite on 64-bit ARM (aarch64, NEON x4
# float), cross-built on an x86-64 Debian 12 machine and run under
# qemu-user. Installs what it needs: the cross compiler, qemu-user, and the
# arm64 -dev packages of the libraries (dpkg --add-architecture arm64).
#
#   ./scripts/test_aarch64.sh                 the cases CI runs (below)
#   ./scripts/test_aarch64.sh ''              every case of the float binary
#   ./scripts/test_aarch64.sh '[kernels]'     one tag
#
# Environment: ATTOGRAD_BUILD_DIR (default build-aarch64), ATTOGRAD_CMAKE_ARGS
# (extra configure arguments), ATTOGRAD_QEMU_TIMEOUT (seconds a case may
# take, default 600). The last line is CTest's summary.
#
# Under emulation a program runs 10–40 times slower than natively, so by
# default the cases whose subject does not depend on the processor are left
# out, each tag with its reason in ATTOGRAD_AARCH64_SKIP below; the kernels',
# gradcheck's, gradgradcheck's, fast paths', modules' and models' cases all
# run. On the 2-vCPU AMD EPYC Zen 5 of .ci/run (2026-12-07, packages
# already there), the whole script took 6 min 54 s, its 423 cases 224 s of
# that under CTest (`/usr/bin/time ./scripts/test_aarch64.sh`).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh

# Tags left out by default (a Catch test spec: ~[tag] each):
#   [cli] [report]   the example programs' flags, files, messages and reports:
#                    the same C++ on every processor, run on x86 in CI; each
#                    starts a program under qemu (seconds each, ~250 cases).
#   [torch]          PyTorch runs on the host only.
#   [architecture]   the source tree's layout and docs: no compiled code.
#   [docs]           the docs' commands: shell and the programs again.
ATTOGRAD_AARCH64_SKIP='~[cli]~[report]~[torch]~[architecture]~[docs]'
spec="${1-$ATTOGRAD_AARCH64_SKIP}"

if [ "$(dpkg --print-architecture)" != amd64 ]; then
  echo "scripts/test_aarch64.sh cross-builds from x86-64; on an ARM64 machine run ./scripts/test.sh" >&2
  exit 1
fi
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  echo "attograd: adding the arm64 architecture to dpkg (for the arm64 -dev packages)"
  runner=()
  [ "$(id -u)" -eq 0 ] || runner=(sudo)
  "${runner[@]}" dpkg --add-architecture arm64
  # attograd_install only runs apt-get update when something is missing,
  # which the arm64 packages below are.
fi
attograd_install_packages  # the header-only ones (xsimd, Catch2, json) and cmake
attograd_install g++-aarch64-linux-gnu qemu-user \
  libfmt-dev:arm64 libutf8proc-dev:arm64 libexpat1-dev:arm64

build="${ATTOGRAD_BUILD_DIR:-build-aarch64}"
# The spec narrows the cases CTest registers (tests/CMakeLists.txt,
# ATTOGRAD_TEST_SPEC); its build type's optimisation as on x86.
# shellcheck disable=SC2086  # ATTOGRAD_CMAKE_ARGS is a list of arguments
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_TOOLCHAIN_FILE="$PWD/cmake/aarch64-linux-gnu.cmake" \
  -DATTOGRAD_TEST_VARIANTS=f32 -DATTOGRAD_BUILD_BENCH=OFF -DATTOGRAD_TEST_SPEC="$spec" \
  ${ATTOGRAD_CMAKE_ARGS:-} >/dev/null
# The float library, the examples and the float test binary (which depends on
# them); not the double library, which no case here uses.
cmake --build "$build" -j "$(nproc)" --target attograd_tests

# The dispatch line: which kernels the ARM build runs.
attograd_dispatch_line qemu-aarch64 "$build/examples/autograd_basics"

ctest --test-dir "$build" --output-on-failure -j "$(nproc)" --timeout "${ATTOGRAD_QEMU_TIMEOUT:-600}"
