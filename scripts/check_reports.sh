#!/usr/bin/env bash
# scripts/check_reports.sh — every kind of report.html (nw_regression,
# translate's tutorial, batched and Transformer recipes, and gpt) from short runs of
# the built programs, checked in headless Chromium by check_reports.py (no
# script or console error, every SVG drawn, the head selector switching the
# shown maps, a screenshot).
#
#   scripts/check_reports.sh                    # programs in build/examples
#   ATTOGRAD_BUILD_DIR=build-ci scripts/check_reports.sh
#   ATTOGRAD_REPORT_SCREENSHOT=docs/images/report.png scripts/check_reports.sh
#
# Prints "SKIP: …" and succeeds where Chromium is missing (scripts/setup.sh's
# attograd_install_browser installs it). Run from anywhere; the runs go to a
# temporary folder that is removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${ATTOGRAD_BUILD_DIR:-build}"
runs="$(mktemp -d)"
trap 'rm -rf "$runs"' EXIT
for program in nw_regression translate gpt; do
  if [ ! -x "$build/examples/$program" ]; then
    echo "error: $build/examples/$program is not built; build the targets nw_regression," \
      "translate and gpt first (or set ATTOGRAD_BUILD_DIR)" >&2
    exit 2
  fi
done

translate="$build/examples/translate"
quiet() { "$@" >"$runs/last.log" 2>&1 || { cat "$runs/last.log" >&2; exit 1; }; }
quiet "$build/examples/nw_regression" --epochs 20 --out "$runs/nw"
quiet "$translate" train --data data/eng-fra.tsv --out "$runs/tutorial" --iters 300 --hidden 16 \
  --print-every 100 --plot-every 10 --examples 3 --dot "$runs/tutorial/graph.dot"
quiet "$translate" train --recipe batched --data data/eng-fra.tsv --out "$runs/batched" \
  --num-examples 200 --epochs 3 --embed 8 --hidden 8 --lr 0.02
# The Transformer at its default size (2 blocks, 4 heads): the report's size
# check is about this one.
quiet "$translate" train --recipe transformer --data data/eng-fra.tsv --out "$runs/transformer" \
  --num-examples 200 --epochs 2
quiet "$build/examples/gpt" train --out "$runs/gpt" --iters 20 --eval-every 10

screenshot=()
if [ -n "${ATTOGRAD_REPORT_SCREENSHOT:-}" ]; then
  screenshot=(--screenshot "$ATTOGRAD_REPORT_SCREENSHOT" --screenshot-fragment
              "${ATTOGRAD_REPORT_SCREENSHOT_FRAGMENT:-#view=attention&kind=encoder%20self}")
fi
python3 scripts/check_reports.py --transformer "$runs/transformer/report.html" \
  --nw "$runs/nw/report.html" --tutorial "$runs/tutorial/report.html" \
  --batched "$runs/batched/report.html" --gpt "$runs/gpt/report.html" "${screenshot[@]}"
