#!/usr/bin/env bash
# scripts/docs_commands.sh — runs every shell command that README.md,
# docs/tour.md and docs/exercises.md give a reader, and checks the figures
# those pages say the commands print. Run it after scripts/test.sh (it needs
# the examples and the test binaries built); .ci/run does.
#
# The commands are every line of the pages' ```sh blocks (a line ending in
# `\` or `|` goes on to the next) and every inline `build/…` command of
# exercises.md's "Check:" lines, run from the repository root in page order,
# with `build/` meaning $ATTOGRAD_BUILD_DIR (default build). A command whose
# full run is long says, in its comment on the page, the arguments CI adds
# to shorten it: `(CI: --iters 300)`. A command that .ci/run already runs by
# another script (the build, the tests, fuzzing, the install) is listed as
# such and not run twice; the table in `covered_by` below says where.
# A command must exit with status 0 unless its page shows its status
# (`; echo "exit $?"`).
#
# Prints each command and its outcome, then a summary; exits 1 when a command
# fails or a figure differs, naming the page and line.
#
#   ATTOGRAD_BUILD_DIR=build-ci scripts/docs_commands.sh
#   scripts/docs_commands.sh --list      # the commands and what runs each, without running them
set -euo pipefail
cd "$(dirname "$0")/.."
build="${ATTOGRAD_BUILD_DIR:-build}"
list_only=0
[[ "${1:-}" == "--list" ]] && list_only=1
pages=(README.md docs/tour.md docs/exercises.md)

# One command per line: page <TAB> line <TAB> command <TAB> comment.
extract_commands() {
  local page="$1"
  awk -v page="$page" -v inline_checks="$([[ $page == docs/exercises.md ]] && echo 1 || echo 0)" '
    # Splits a shell line into the command and its trailing comment (a # after
    # a space, outside quotes).
    function split_comment(text,    i, c, quote) {
      quote = ""
      for (i = 1; i <= length(text); i++) {
        c = substr(text, i, 1)
        if (quote != "") { if (c == quote) quote = ""; continue }
        if (c == "\"" || c == "'\''") { quote = c; continue }
        if (c == "#" && (i == 1 || substr(text, i - 1, 1) ~ /[ \t]/)) {
          comment = substr(text, i + 1); return substr(text, 1, i - 1)
        }
      }
      comment = ""; return text
    }
    function trim(s) { sub(/^[ \t]+/, "", s); sub(/[ \t]+$/, "", s); return s }
    /^```/ {
      if (!fence) { fence = 1; shell = ($0 ~ /^```(sh|bash|shell)[ \t]*$/); next }
      fence = 0; shell = 0; next
    }
    fence && shell {
      line = split_comment($0)
      if (pending == "") { start = NR; notes = "" }
      notes = notes " " comment
      line = trim(line)
      if (line ~ /\\$/) { pending = pending substr(line, 1, length(line) - 1) " "; next }
      if (line ~ /\|$/) { pending = pending line " "; next }
      command = trim(pending line); pending = ""
      if (command != "") print page "\t" start "\t" command "\t" trim(notes)
      next
    }
    !fence && inline_checks {
      rest = $0
      while (match(rest, /`build\/[^`]+`/)) {
        print page "\t" NR "\t" substr(rest, RSTART + 1, RLENGTH - 2) "\t"
        rest = substr(rest, RSTART + RLENGTH)
      }
    }
  ' "$page"
}

# Where .ci/run already runs a command by another script; empty: run it here.
covered_by() {
  case "$1" in
    "./scripts/test.sh"*) echo ".ci/run runs scripts/test.sh: the Release build and every test" ;;
    "./scripts/fuzz.sh"*) echo ".ci/run runs scripts/fuzz.sh first (40 s per target)" ;;
    "cmake -S . -B build"* | "cmake --build build"* | "ctest --test-dir build"*)
      echo "scripts/test.sh, which .ci/run runs, configures, builds and runs CTest the same way" ;;
    "cmake --install build"*)
      echo "scripts/test_install.sh, which .ci/run runs, installs the build and builds against it" ;;
    *) echo "" ;;
  esac
}

# The figures the pages give, four fields each: the page, the sentence on the
# page that gives the figure, a part of the command that prints it, and a
# regex its output (newlines read as spaces) must match. The page must still
# say the sentence and the output must match it. Loose where the last digit
# would depend on the machine's float sums (AVX2 or AVX-512).
figures=(
  docs/tour.md "It prints g = 24.7041, dg/da = 138.8338, dg/db = 645.5773"
  "build/examples/autograd_basics --dot out/micrograd.dot" "24\.7041.*138\.8338.*645\.5773"

  docs/tour.md "error: DetectAnomaly: forward op 'gru_sequence'"
  "--lr 1e30 --detect-anomaly" "error: DetectAnomaly: forward op 'gru_sequence'.*produced nan.*exit 2"

  README.md "| \`i'm home .\` | \`je suis chez moi .\` — BLEU 1.000 | \`je suis chez moi .\` — 1.000 |"
  "translate translate --recipe batched" "je suis chez moi \."

  README.md "| \`i'm home .\` | \`je suis chez moi .\` — BLEU 1.000 |"
  "translate translate --recipe transformer" "je suis chez moi \."

  docs/exercises.md "reaches SGD's final loss in 2 steps where SGD takes 100 epochs"
  "higher_order --out out/ex_newton" "Newton reaches SGD's final loss in 2 steps"
)

failures=()
problems=0
problem() {
  failures+=("$@")
  problems=$((problems + 1))
}
ran=0
covered=0
run_log="$(mktemp)"
trap 'rm -f "$run_log"' EXIT

for page in "${pages[@]}"; do
  while IFS=$'\t' read -r _ line command notes; do
    where="$page:$line"
    reason="$(covered_by "$command")"
    if [[ -n "$reason" ]]; then
      echo "-- $where: $command"
      echo "   covered: $reason"
      covered=$((covered + 1))
      continue
    fi
    extra=""
    if [[ "$notes" =~ \(CI:\ ([^\)]*)\) ]]; then extra=" ${BASH_REMATCH[1]}"; fi
    # `build/` is the build folder CI uses; the f64 test binary exists only
    # in builds configured with it.
    to_run="$(sed -E "s#(^|[ |;(])build/#\\1$build/#g" <<<"$command")$extra"
    if [[ "$to_run" == *attograd_tests_f64* && ! -x "$build/tests/attograd_tests_f64" ]]; then
      echo "-- $where: $command"
      echo "   skipped: $build has no attograd_tests_f64 (configured with ATTOGRAD_TEST_VARIANTS=f32)"
      continue
    fi
    echo "-- $where: $command${extra:+   [CI adds:$extra]}"
    [[ $list_only == 1 ]] && continue
    ran=$((ran + 1))
    started=$SECONDS
    # demo.sh builds its programs itself: point it at the same build folder.
    if ATTOGRAD_BUILD_DIR="$build" bash -o pipefail -c "$to_run" </dev/null >"$run_log" 2>&1; then
      status=0
    else
      status=$?
    fi
    echo "   exit $status, $((SECONDS - started)) s"
    if [[ $status != 0 ]]; then
      problem "$where: \`$command\` exited with status $status; its output ends:" \
        "$(tail -n 15 "$run_log" | sed 's/^/    /')"
      continue
    fi
    for ((f = 0; f < ${#figures[@]}; f += 4)); do
      figure_page="${figures[f]}" sentence="${figures[f + 1]}"
      pattern="${figures[f + 2]}" expected="${figures[f + 3]}"
      [[ "$figure_page" == "$page" && "$command" == *"$pattern"* ]] || continue
      if ! grep -qF -- "$sentence" "$page"; then
        problem "$where: $page no longer says \"$sentence\"; update its figure in scripts/docs_commands.sh"
      elif ! tr '\n' ' ' <"$run_log" | grep -qE -- "$expected"; then
        problem "$where: the page says \"$sentence\", but \`$command\` printed no match for /$expected/; its output ends:" \
          "$(tail -n 15 "$run_log" | sed 's/^/    /')"
      else
        echo "   prints what the page says: $sentence"
      fi
    done
  done < <(extract_commands "$page")
done

[[ $list_only == 1 ]] && exit 0
echo
echo "docs commands: $ran run, $covered run by other CI steps, $problems problem(s)"
if ((problems > 0)); then
  printf '%s\n' "${failures[@]}" >&2
  exit 1
fi
