#!/usr/bin/env bash
# scripts/test_install.sh — install attograd into a temporary prefix, then
# build and run examples/extension against it as an outside project would:
# find_package(attograd) and nothing else, no C++ standard or flags of its own.
#
# Checks that the consumer's compile lines carry C++20 (from the targets) and
# no instruction-set flag, that the layer's gradients pass gradcheck in the
# double library, and that training, plotting, saving and reloading work.
# Then builds examples/fit_mlp.cpp, copied out of the tree, against the same
# prefix (its flags parser is attograd::examples_common) and runs it.
#
# Environment: ATTOGRAD_BUILD_DIR, the build to install (default: build; it is
# configured and the three libraries are built if needed).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
build="${ATTOGRAD_BUILD_DIR:-build}"
if [[ ! -f "$build/CMakeCache.txt" ]] || [[ ! -f "$build/libattograd_f64.a" ]] \
  || [[ ! -f "$build/libattograd_plot.a" ]] || [[ ! -f "$build/libattograd_examples_common.a" ]]; then
  attograd_install_packages
  ATTOGRAD_TARGETS="attograd attograd_f64 attograd_plot attograd_examples_common" attograd_build
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
echo "-- examples/fit_mlp.cpp as a project of its own (attograd::attograd, attograd::examples_common)"
# The in-tree example, copied out unchanged: its includes and flags parser
# must all come from the installed package.
mkdir -p "$scratch/fit_mlp"
cp examples/fit_mlp.cpp "$scratch/fit_mlp/"
cat >"$scratch/fit_mlp/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.25)
project(fit_mlp_outside LANGUAGES CXX)
find_package(attograd REQUIRED COMPONENTS examples_common)
add_executable(fit_mlp fit_mlp.cpp)
target_link_libraries(fit_mlp PRIVATE attograd::attograd attograd::examples_common)
CMAKE
cmake -S "$scratch/fit_mlp" -B "$scratch/fit_mlp/build" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_CXX_FLAGS="-Wall -Wextra -Werror" >/dev/null
cmake --build "$scratch/fit_mlp/build" -j "$(nproc)" >/dev/null
"$scratch/fit_mlp/build/fit_mlp" --steps 50 --print-every 50 --out "$scratch/fit_mlp/run" >/dev/null
if [[ ! -s "$scratch/fit_mlp/run/fit_mlp.safetensors" ]]; then
  echo "error: fit_mlp built outside the tree did not write fit_mlp.safetensors" >&2
  exit 1
fi
status=0
"$scratch/fit_mlp/build/fit_mlp" --steps 0 >/dev/null 2>&1 || status=$?
if [[ "$status" != 2 ]]; then
  echo "error: fit_mlp built outside the tree exited $status on --steps 0; expected 2" >&2
  exit 1
fi
echo "installed package: OK"
