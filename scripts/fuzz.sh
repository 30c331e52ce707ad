#!/usr/bin/env bash
# scripts/fuzz.sh — build the libFuzzer targets in fuzz/ with clang-14,
# AddressSanitizer and UndefinedBehaviorSanitizer, and run each for a bounded
# time on its seed corpus (fuzz/corpus/<target>/). A crash, a leak, a timeout,
# a sanitizer report or a broken promise of the target (it calls abort())
# fails the script; libFuzzer saves the input as <build>/crash-*.
#
#   scripts/fuzz.sh                        # every target, 40 s each
#   ATTOGRAD_FUZZ_SECONDS=300 scripts/fuzz.sh safetensors_reader
#
# Environment knobs:
#   ATTOGRAD_FUZZ_DIR      build folder (default: build-fuzz)
#   ATTOGRAD_FUZZ_SECONDS  seconds per target (default: 40)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh

ATTOGRAD_PACKAGES+=("${ATTOGRAD_FUZZ_PACKAGES[@]}")
attograd_install_packages

build="${ATTOGRAD_FUZZ_DIR:-build-fuzz}"
seeds="$PWD/fuzz/corpus"
seconds="${ATTOGRAD_FUZZ_SECONDS:-40}"
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(safetensors_reader checkpoint_loader sentence_pairs normalizer)
compiler=(clang++-14)
command -v ccache >/dev/null && compiler=(ccache clang++-14)

flags=(-std=c++20 -O1 -g -fno-omit-frame-pointer -march=native -I. -DATTOGRAD_REAL=float
       -DATTOGRAD_USE_SIMD=1 -fsanitize=address,undefined -fno-sanitize-recover=undefined
       $(pkg-config --cflags libutf8proc))
libraries=(-lfmt $(pkg-config --libs libutf8proc) -pthread)

# The library code the targets reach, and only that (the tensors and the
# graph a module needs, the module, Linear and the checkpoint code, the text
# readers), compiled once for all of them (instrumented for coverage, but
# without libFuzzer's main).
mapfile -t sources < <(
  find tensor autograd -name '*.cpp'
  printf 'nn/%s.cpp\n' checkpoint safetensors safetensors_header module linear init optim
  printf 'models/text/%s.cpp\n' normalize pairs vocabulary
)
# Compiled 8 to a file, as the CMake build's ATTOGRAD_UNITY does: the headers
# they share are parsed once per batch. The GEMM's packed kernels compile at
# -O0: at -O1 clang 14 took 109 s over that one file with both sanitizers
# (3.5 s at -O0), and no target's input decides what a GEMM does.
mapfile -t sources < <(printf '%s\n' "${sources[@]}" | grep -vx tensor/kernels_gemm.cpp | sort)
rm -rf "$build/objects" && mkdir -p "$build/objects"
batches=()
for ((i = 0; i < ${#sources[@]}; i += 8)); do
  batch="$build/objects/batch_$((i / 8)).cpp"
  printf '#include "%s"\n' "${sources[@]:i:8}" >"$batch"
  batches+=("$batch")
done
printf '#include "tensor/kernels_gemm.cpp"\n' >"$build/objects/gemm.cpp"
# Each job: a file and the optimisation it compiles with (the last -O counts).
printf '%s\n' "$build/objects/gemm.cpp" -O0 "${batches[@]/%/$'\n'-O1}" | xargs -d '\n' -n 2 \
  -P "$(nproc)" sh -c "${compiler[*]}"' '"${flags[*]}"' -fsanitize=fuzzer-no-link "$1" -c "$0" -o "$0.o"'
mapfile -t objects < <(printf '%s.o\n' "$build/objects/gemm.cpp" "${batches[@]}")

for target in "${targets[@]}"; do
  echo "== fuzz: $target, ${seconds} s =="
  "${compiler[@]}" "${flags[@]}" -fsanitize=fuzzer "fuzz/$target.cpp" "${objects[@]}" \
    "${libraries[@]}" -o "$build/$target"
  # New inputs go to a scratch corpus; the seeds in the repository stay as they are.
  mkdir -p "$build/corpus/$target"
  (cd "$build" && "./$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -max_len=65536 -print_final_stats=1 "corpus/$target" "$seeds/$target")
done
echo "fuzz: every target ran without a finding"
