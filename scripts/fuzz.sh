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
mkdir -p "$build/objects"
mapfile -t sources < <(
  find tensor autograd -name '*.cpp'
  printf 'nn/%s.cpp\n' checkpoint safetensors safetensors_header module linear init optim
  printf 'models/text/%s.cpp\n' normalize pairs vocabulary
)
mapfile -t sources < <(printf '%s\n' "${sources[@]}" | sort)
printf '%s\n' "${sources[@]}" | xargs -P "$(nproc)" -I{} sh -c \
  'mkdir -p "$(dirname "$0/objects/$1")" && '"${compiler[*]}"' '"${flags[*]}"' -fsanitize=fuzzer-no-link -c "$1" -o "$0/objects/$1.o"' \
  "$build" {}
mapfile -t objects < <(printf "$build/objects/%s.o\n" "${sources[@]}")

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
