#!/usr/bin/env bash
# scripts/test_install.sh — install attograd into a temporary prefix, then
# build and run examples/extension against it as an outside project would:
# find_package(attograd) and nothing else, no C++ standard or flags of its own.
#
# Checks that the consumer's compile lines carry C++20 (from the targets) and
# no instruction-set flag, that the layer's gradients pass gradcheck in the
# double library, and that training, plotting, saving and reloading work.
#
# Environment: ATTOGRAD_BUILD_DIR, the build to install (default: build; it is
# configured and the three libraries are built if needed).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
build="${ATTOGRAD_BUILD_DIR:-build}"
if [[ ! -f "$build/CMakeCache.txt" ]] || [[ ! -f "$build/libattograd_f64.a" ]] \
  || [[ ! -f "$build/libattograd_plot.a" ]]; then
  attograd_install_packages
  ATTOGRAD_TARGETS="attograd attograd_f64 attograd_plot" attograd_build
fi

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
prefix="$scratch/prefix"

echo "-- cmake --install $build --prefix <temporary prefix>"
cmake --install "$build" --prefix "$prefix" >/dev/null

echo "-- configure and build examples/extension against it"
# The warnings are the test's, to prove the installed headers compile cleanly
# in someone else's project; the project itself sets none.
cmake -S examples/extension -B "$scratch/build" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_EXPORT_COMPILE_COMMANDS=ON -DCMAKE_CXX_FLAGS="-Wall -Wextra -Werror" >/dev/null
cmake --build "$scratch/build" -j "$(nproc)" >/dev/null

commands="$scratch/build/compile_commands.json"
if ! grep -q -- '-std=c++20\|-std=gnu++20' "$commands"; then
  echo "error: the consumer's compile lines lack -std=c++20; the attograd targets must carry cxx_std_20" >&2
  exit 1
fi
if grep -q -- '-march=\|-mavx\|-msse\|-mtune=' "$commands"; then
  echo "error: an instruction-set flag reached the consumer's compile lines:" >&2
  grep -o -- '-march=[^ ]*\|-mavx[^ ]*\|-msse[^ ]*\|-mtune=[^ ]*' "$commands" | sort -u >&2
  exit 1
fi

echo "-- check_rms_norm (attograd::attograd_f64)"
"$scratch/build/check_rms_norm"
echo "-- train_rms_norm (attograd::attograd, attograd::plot)"
"$scratch/build/train_rms_norm" --out "$scratch/run"
for file in rms_norm_loss.svg rms_norm_mlp.safetensors; do
  if [[ ! -s "$scratch/run/$file" ]]; then
    echo "error: train_rms_norm did not write $file" >&2
    exit 1
  fi
done
echo "installed package: OK"
