// tests/examples/test_inspect_flags_cli.cpp — the trainers' --dot,
// --detect-anomaly, --profile and --lr-schedule flags, run on the built
// programs (float build only).
#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "tests/support/svg.hpp"
#include "tests/support/translate_program.hpp"

namespace test_inspect_flags_cli {

using namespace attograd::testing::translate_program;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

size_t count(const std::string& text, const std::string& word) {
  size_t n = 0;
  for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) ++n;
  return n;
}

const attograd::testing::Program autograd_basics(fs::path(ATTOGRAD_BINARY_DIR) / "examples" /
                                                 "autograd_basics");
const attograd::testing::Program nw_regression(fs::path(ATTOGRAD_BINARY_DIR) / "examples" /
                                               "nw_regression");

}  // namespace

TEST_CASE("translate train --lr 1e30 --detect-anomaly ends with the op that went non-finite",
          "[inspect][cli]") {
  if constexpr (!kFloatBuild) return;
  TemporaryFolder scratch;
  const Run result = run({"train", "--data", kShippedData.string(), "--iters", "20", "--lr", "1e30",
                          "--detect-anomaly", "--out", (scratch.path / "out").string()},
                         scratch.path);
  require_one_line_error(result);
  CHECK_THAT(result.err, StartsWith("error: DetectAnomaly: forward op '"));
  CHECK_THAT(result.err, Contains("recorded since DetectAnomaly began) produced "));
  CHECK_THAT(result.err, Contains("its inputs had shapes ["));
}

TEST_CASE("translate train --dot draws one iteration by module, --profile prints the table",
          "[inspect][cli]") {
  if constexpr (!kFloatBuild) return;
  TemporaryFolder scratch;
  const fs::path dot = scratch.path / "iteration.dot";
  const fs::path svg_file = scratch.path / "iteration.svg";
  const Run result = run({"train", "--data", kShippedData.string(), "--iters", "2", "--dot",
                          dot.string(), "--profile", "--out", (scratch.path / "out").string()},
                         scratch.path);
  INFO(result.err);
  REQUIRE(result.status == 0);
  const std::string text = read_file(dot);
  CHECK_THAT(text, StartsWith("digraph attograd {"));
  CHECK(count(text, "label=\"encoder\\n") == 1);
  CHECK(count(text, "label=\"decoder\\n") == 1);
  CHECK_THAT(result.out, Contains("Wrote the graph to " + dot.string()));
  // The SVG beside it, drawn by plot/svg_graph.cpp: the same module boxes.
  const attograd::testing::ParsedSvg svg = attograd::testing::parse_svg(read_file(svg_file));
  REQUIRE(svg.error.empty());
  CHECK(svg.has_text("encoder"));
  CHECK(svg.has_text("decoder"));
  CHECK_THAT(result.out, Contains("\nlinear "));
  CHECK_THAT(result.out, Contains("\noptimizer.step "));
  CHECK_THAT(result.out, Contains("\n(all) "));
}

TEST_CASE("autograd_basics --dot writes the micrograd graph with values", "[inspect][cli]") {
  if constexpr (!kFloatBuild) return;
  TemporaryFolder scratch;
  const fs::path dot = scratch.path / "g.dot";
  const Run result = autograd_basics({"--dot", dot.string()}, scratch.path);
  REQUIRE(result.status == 0);
  const std::string text = read_file(dot);
  CHECK(count(text, "shape=box,") == 25);
  CHECK(count(text, "shape=ellipse,") == 8);
  CHECK_THAT(text, Contains("label=\"a\\n()\\nrequires_grad\\ndata [-4]\\ngrad [138.8]\""));
  CHECK_THAT(result.out, Contains("dg/da = 138.8338"));
}

TEST_CASE("autograd_basics --dot draws the SVG itself: no Graphviz on PATH",
          "[inspect][cli][graph-svg]") {
  if constexpr (!kFloatBuild) return;
  TemporaryFolder scratch;
  const fs::path empty = scratch.path / "no_programs";  // PATH holds only this empty folder
  fs::create_directories(empty);
  const fs::path dot = scratch.path / "g.dot";
  const fs::path binary = fs::path(ATTOGRAD_BINARY_DIR) / "examples" / "autograd_basics";
  const Run result = attograd::testing::run_program(
      "/usr/bin/env", {"PATH=" + empty.string(), binary.string(), "--dot", dot.string()},
      scratch.path);
  INFO(result.err);
  REQUIRE(result.status == 0);
  CHECK_THAT(result.out, Contains("Wrote the graph to " + dot.string() + " and " +
                                  (scratch.path / "g.svg").string()));
  const std::string text = read_file(scratch.path / "g.svg");
  REQUIRE(!text.empty());
  const attograd::testing::ParsedSvg svg = attograd::testing::parse_svg(text);
  REQUIRE(svg.error.empty());
  CHECK(svg.has_text("grad [138.8]"));  // a's gradient, in a's ellipse
  CHECK(svg.all("path").size() > 25);   // the edges (and the arrowhead's shape)
}

TEST_CASE("nw_regression --dot and --profile see one SGD step per epoch", "[inspect][cli]") {
  if constexpr (!kFloatBuild) return;
  TemporaryFolder scratch;
  const fs::path dot = scratch.path / "epoch.dot";
  const Run result = nw_regression({"--epochs", "3", "--dot", dot.string(), "--profile", "--out",
                                    (scratch.path / "out").string()},
                                   scratch.path);
  REQUIRE(result.status == 0);
  // The softmax and the weighted sum are one fused node (autograd/fast/fused.hpp).
  CHECK_THAT(read_file(dot), Contains("label=\"attention_pool\\n"));
  // One row per op name and one for the three optimizer steps (a ProfileScope).
  CHECK_THAT(result.out, Contains("\noptimizer.step "));
  CHECK_THAT(result.out, Contains("\nattention_pool "));
}

TEST_CASE("translate --recipe batched --lr-schedule: the rate per epoch, or a one-line error",
          "[inspect][cli][lr_scheduler]") {
  if constexpr (!kFloatBuild) return;
  TemporaryFolder scratch;
  const std::vector<std::string> common = {"train",
                                           "--recipe",
                                           "batched",
                                           "--data",
                                           kShippedData.string(),
                                           "--num-examples",
                                           "64",
                                           "--epochs",
                                           "4",
                                           "--print-every",
                                           "1",
                                           "--out",
                                           (scratch.path / "out").string()};
  std::vector<std::string> warmup = common;
  warmup.insert(warmup.end(), {"--lr", "0.004", "--lr-schedule", "warmup:4"});
  const Run result = run(warmup, scratch.path);
  INFO(result.err);
  REQUIRE(result.status == 0);
  // LinearLR(1/4, 1, 4): 0.004 · (0.25, 0.4375, 0.625, 0.8125).
  CHECK_THAT(result.out, Contains("ms/epoch  lr 0.001\n"));
  CHECK_THAT(result.out, Contains("ms/epoch  lr 0.00175\n"));
  CHECK_THAT(result.out, Contains("ms/epoch  lr 0.0025\n"));
  CHECK_THAT(result.out, Contains("ms/epoch  lr 0.00325\n"));

  std::vector<std::string> bad = common;
  bad.insert(bad.end(), {"--lr-schedule", "cosine:3"});
  const Run refused = run(bad, scratch.path);
  require_one_line_error(refused);
  CHECK_THAT(refused.err, StartsWith("error: --lr-schedule: 'cosine:3' is not one of constant, "));
}

}  // namespace test_inspect_flags_cli
