#!/usr/bin/env bash
# scripts/demo.sh — install what is missing, build, and run the main demos on
# the shipped data.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
attograd_install_packages
ATTOGRAD_TARGETS="${ATTOGRAD_TARGETS:-autograd_basics nw_regression translate}" attograd_build
build="${ATTOGRAD_BUILD_DIR:-build}"

echo
echo "== 1. Attention pooling as Nadaraya–Watson kernel regression (examples/nw_regression) =="
"$build/examples/nw_regression" --out out/nw_regression
echo "The pictures (fit vs truth, loss curve, attention heatmaps, kernel shapes) are in out/nw_regression/"

echo
echo "== 2. French -> English with a GRU seq2seq and attention (examples/translate) =="
echo "A short run of the tutorial recipe: 3,000 of its 75,000 iterations (5 s to half a minute, by machine)."
echo "(The full recipe: $build/examples/translate train — see README.md.)"
"$build/examples/translate" train --iters 3000 --print-every 500 --examples 3 --out out/translate
echo
echo "Translating two sentences with the checkpoint just written:"
printf 'je suis trop fatigue .\nil est tres gentil .\n' |
  "$build/examples/translate" translate --checkpoint out/translate/checkpoint.safetensors \
    --attention out/translate/maps
echo "The loss curve and attention maps are in out/translate/ and out/translate/maps/"

echo
echo "== 3. Reverse-mode autodiff on the micrograd expression (examples/autograd_basics) =="
"$build/examples/autograd_basics"
