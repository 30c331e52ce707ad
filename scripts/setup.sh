#!/usr/bin/env bash
# scripts/setup.sh — shared by demo.sh and test.sh: install what the build
# needs (Debian 12 packages), then configure and build.
#
# Environment knobs:
#   ATTOGRAD_BUILD_DIR   build folder (default: build)
#   ATTOGRAD_BUILD_TYPE  CMake build type (default: Release)
#   ATTOGRAD_CMAKE_ARGS  extra arguments for the CMake configure step
#   ATTOGRAD_TARGETS     targets to build (default: all)
set -euo pipefail

ATTOGRAD_PACKAGES=(cmake g++ make pkg-config libxsimd-dev xtl-dev libfmt-dev catch2
                   nlohmann-json3-dev libutf8proc-dev libexpat1-dev)
# scripts/fuzz.sh adds these: libFuzzer and the sanitizer runtimes come with
# clang; llvm-14 has the symbolizer that puts file and line in a report.
ATTOGRAD_FUZZ_PACKAGES=(clang-14 libclang-rt-14-dev llvm-14)

# The PyTorch bridge's tests ([torch], [torch-double]) and scripts/torch_*.py
# need these; .ci/run installs them (attograd_install_torch).
ATTOGRAD_TORCH_PACKAGES=(python3-torch libopenblas0-pthread)

# attograd_install PACKAGE...: installs those of the Debian packages that are
# missing (apt-get, through sudo when not root).
attograd_install() {
  local missing=()
  for package in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$package")
    fi
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "attograd: installing missing packages: ${missing[*]}"
  local runner=()
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
      runner=(sudo)
    else
      echo "attograd: these packages are missing and I cannot install them without root:" >&2
      echo "  sudo apt-get install -y ${missing[*]}" >&2
      exit 1
    fi
  fi
  "${runner[@]}" apt-get update -qq
  # Without the packages' recommendations: the lists above name what the
  # project uses. For PyTorch they add 54 packages (libtorch-dev's 8,198
  # headers among them), for Chromium 105 (systemd, CUPS, Perl), by
  # `apt-get -s` against a fresh Debian 12 machine's package list; a headless
  # Chromium run of scripts/check_reports.sh and the bridge's commands under
  # strace opened none of their files.
  DEBIAN_FRONTEND=noninteractive "${runner[@]}" apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
}

attograd_install_packages() { attograd_install "${ATTOGRAD_PACKAGES[@]}"; }
attograd_install_torch() { attograd_install "${ATTOGRAD_TORCH_PACKAGES[@]}"; }

# attograd_dispatch_line COMMAND...: prints the first line of the example
# program that names the build's kernels ("avx512bw x16 float", "fma3+avx2
# x8 float", "arm64+neon x4 float", "scalar float", …; docs/kernels.md),
# e.g. `attograd_dispatch_line build/examples/autograd_basics`.
attograd_dispatch_line() {
  local out
  out=$("$@" </dev/null)
  head -1 <<<"$out"
}

attograd_build() {
  local source_dir build_dir build_type
  source_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  build_dir="${ATTOGRAD_BUILD_DIR:-build}"
  build_type="${ATTOGRAD_BUILD_TYPE:-Release}"
  # shellcheck disable=SC2086  # ATTOGRAD_CMAKE_ARGS is a list of arguments
  cmake -S "$source_dir" -B "$build_dir" -DCMAKE_BUILD_TYPE="$build_type" ${ATTOGRAD_CMAKE_ARGS:-} >/dev/null
  local targets=()
  for target in ${ATTOGRAD_TARGETS:-}; do targets+=(--target "$target"); done
  cmake --build "$build_dir" -j "$(nproc)" "${targets[@]}"
}

# Chromium, for scripts/check_reports.sh (report.html in a headless browser).
# Separate from attograd_install_packages: the build and the tests do not need
# it, and it is large (about 100 MB with its libraries on Debian 12).
ATTOGRAD_BROWSER_PACKAGES=(chromium)
attograd_install_browser() { attograd_install "${ATTOGRAD_BROWSER_PACKAGES[@]}"; }
