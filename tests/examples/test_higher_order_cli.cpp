// tests/examples/test_higher_order_cli.cpp — the higher_order program as a
// user runs it: Newton on the Nadaraya–Watson width reaches SGD's final loss
// in fewer steps than SGD's epochs, the Hessian-vector product agrees with
// finite differences, the Rosenbrock Hessian with its closed form, the
// gradient penalty lowers the input-gradient norm; the --json line, the SVG
// (parsed with expat), the --dot graph of a gradient, and one-line errors with
// exit status 2 for bad flags.
//
// It runs the built binary ATTOGRAD_BINARY_DIR/examples/higher_order (the
// library's element type, float by default), so the example target must be
// built before the tests run (building the tests builds it).
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/program.hpp"
#include "tests/support/svg.hpp"

namespace test_higher_order_cli {

namespace fs = std::filesystem;

namespace {

namespace support = attograd::testing;
using support::lines_of;
using support::read_file;
using support::TemporaryFolder;
using Run = support::ProgramRun;
const support::Program run(fs::path(ATTOGRAD_BINARY_DIR) / "examples" / "higher_order");

size_t count(const std::string& text, const std::string& word) {
  size_t n = 0;
  for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) ++n;
  return n;
}

// The op boxes of a DOT text: the label's first line of every `shape=box` node.
std::vector<std::string> op_names(const std::string& dot) {
  std::vector<std::string> names;
  for (const std::string& line : lines_of(dot)) {
    if (line.find("shape=box") == std::string::npos) continue;
    const size_t label = line.find("label=\"");
    if (label == std::string::npos) continue;
    const size_t start = label + 7;
    names.push_back(line.substr(start, line.find("\\n", start) - start));
  }
  return names;
}

}  // namespace

TEST_CASE("higher_order --json: Newton beats SGD's epochs, H·v matches finite differences",
          "[higher-order][examples][cli]") {
  TemporaryFolder folder;
  const fs::path out = folder.path / "pictures";
  const fs::path dot = folder.path / "gradient.dot";
  const Run result =
      run({"--json", "--out", out.string(), "--dot", dot.string(), "--penalty-steps", "100"},
          folder.path);
  INFO("stderr: " << result.err);
  REQUIRE(result.status == 0);
  const std::vector<std::string> lines = lines_of(result.out);
  REQUIRE(lines.size() == 1);  // --json: nothing but the summary on stdout
  const nlohmann::json summary = nlohmann::json::parse(lines[0]);
  INFO(summary.dump(2));

  for (const char* field :
       {"newton_steps", "newton_final_loss", "sgd_epochs", "sgd_final_loss",
        "hvp_max_relative_error", "hessian", "hessian_closed_form", "backward_us",
        "backward_create_graph_us", "penalty_gradient_norm2", "plain_gradient_norm2"}) {
    INFO(field);
    CHECK(summary.contains(field));
  }

  // Newton on the seed's loss reaches SGD's final loss after 100 epochs in
  // fewer steps than SGD took, and ends no higher.
  CHECK(summary["sgd_epochs"] == 100);
  REQUIRE(summary["newton_steps"].is_number_integer());
  const int newton_steps = summary["newton_steps"];
  CHECK(newton_steps >= 1);
  CHECK(newton_steps < 100);
  CHECK(summary["newton_final_loss"].get<double>() <= summary["sgd_final_loss"].get<double>());
  CHECK(summary["sgd_final_loss"].get<double>() < 100);  // a loss, not a NaN or a blow-up

  // H·v by double backward against central differences of gradients at ε = ∛u
  // (4.9e-3 in float). The bound is the difference's own error, not H·v's:
  // truncation ~ε² and rounding ~u/ε are each ~2.4e-5 times the MLP's
  // derivatives (gradients summed over 32 samples, θ ± εv rounded to float),
  // measured 1.9e-4 at seed 0 (the run below) and 9e-5 to 1.5e-3 over seeds
  // 0–20, so 1e-3 is about 5× the value this run gives, not tighter.
  CHECK(summary["hvp_max_relative_error"].get<double>() < 1e-3);
  CHECK(summary["hvp_max_relative_error"].get<double>() >= 0);

  // Rosenbrock at (−1.2, 1): H = [[1330, 480], [480, 200]], to float rounding.
  const nlohmann::json& hessian = summary["hessian"];
  CHECK(hessian[0][0].get<double>() == Approx(1330).epsilon(1e-5));
  CHECK(hessian[0][1].get<double>() == Approx(480).epsilon(1e-5));
  CHECK(hessian[1][0].get<double>() == Approx(480).epsilon(1e-5));
  CHECK(hessian[1][1].get<double>() == Approx(200).epsilon(1e-5));

  // The penalty makes the fitted function flatter.
  CHECK(summary["penalty_gradient_norm2"].get<double>() <
        summary["plain_gradient_norm2"].get<double>());

  // The picture: one SVG, well-formed, with both curves — SGD's one point per
  // epoch and the start, Newton's one per iterate.
  const fs::path svg_path = out / "newton_vs_sgd.svg";
  REQUIRE(fs::exists(svg_path));
  for (const auto& entry : fs::directory_iterator(out)) {
    INFO(entry.path().string());
    CHECK(entry.path().filename() == "newton_vs_sgd.svg");  // no temporary files left
  }
  const support::ParsedSvg svg = support::parse_svg(read_file(svg_path));
  REQUIRE(svg.error == "");
  REQUIRE(!svg.elements.empty());
  CHECK(svg.elements.front().tag == "svg");
  const auto points = [&svg](const std::string& series) {
    size_t n = 0;
    for (const support::Element* line : svg.in_series(series, "polyline")) {
      std::istringstream in(line->attribute("points"));
      for (std::string point; in >> point;) ++n;
    }
    return n;
  };
  CHECK(points("SGD, lr 0.5") == 101);
  CHECK(points("Newton (L', L'' by double backward)") ==
        summary["newton_steps_run"].get<size_t>() + 1);
  CHECK(svg.count_in_series("Newton iterates", "circle") ==
        summary["newton_steps_run"].get<size_t>() + 1);

  // --dot: the graph of ∂f/∂a, whose ops the backward pass recorded. f's own
  // forward graph has 7 ops (sub, pow, pow, sub, pow, mul, add) and no neg;
  // the gradient's graph has more, among them the neg that sub's closure
  // records for its second operand (∂(1 − a)/∂a = −1).
  const std::string text = read_file(dot);
  CHECK(text.rfind("digraph attograd {", 0) == 0);
  const std::vector<std::string> ops = op_names(text);
  CHECK(ops.size() > 7);
  CHECK(std::count(ops.begin(), ops.end(), "neg") >= 1);
  CHECK(std::count(ops.begin(), ops.end(), "mul") >= 1);
  CHECK(count(text, "label=\"a\\n") == 1);
  CHECK(count(text, "label=\"b\\n") == 1);
  CHECK(result.err.find("Wrote the graph to " + dot.string()) != std::string::npos);
}

TEST_CASE("higher_order prints the report of the four parts", "[higher-order][examples][cli]") {
  TemporaryFolder folder;
  const Run result = run({"--out", (folder.path / "out").string(), "--penalty-steps", "20",
                          "--newton-steps", "3", "--epochs", "10"},
                         folder.path);
  INFO("stderr: " << result.err);
  REQUIRE(result.status == 0);
  CHECK(result.err.empty());
  for (const char* needle :
       {"1. Hessian-vector product of an MLP's loss", "max relative error",
        "with create_graph:", "2. Hessian of Rosenbrock's f(a, b)", "∂²f/∂a∂b",
        "3. Newton's method on the Nadaraya–Watson width w", "SGD, lr 0.5: after 10 epochs",
        "4. Gradient penalty", "with λ = 0.1", "newton_vs_sgd.svg"}) {
    INFO(needle);
    CHECK(result.out.find(needle) != std::string::npos);
  }
}

TEST_CASE("higher_order refuses bad flags with one line and status 2",
          "[higher-order][examples][cli]") {
  TemporaryFolder folder;
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--newton-steps", "0"},
       "error: --newton-steps: expected a positive integer at most 100000, got '0'"},
      {{"--lr", "abc"}, "error: --lr: expected a positive number, got 'abc'"},
      {{"--penalty", "-1"}, "error: --penalty: expected a positive number, got '-1'"},
      {{"--frobnicate"}, "error: unknown flag --frobnicate (see --help)"},
      {{"--out", (folder.path / "file" / "below").string()}, "error: --out '"},
  };
  support::write_file(folder.path / "file", "a file where a folder should be");
  for (const auto& [arguments, message] : cases) {
    INFO(arguments[0]);
    const Run result = run(arguments, folder.path);
    support::require_one_line_error(result);
    CHECK(result.err.rfind(message, 0) == 0);
    CHECK(result.out.empty());
  }
  const Run help = run({"--help"}, folder.path);
  CHECK(help.status == 0);
  CHECK(help.out.rfind("Usage: higher_order [flags]", 0) == 0);
  CHECK(help.out.find("--dot") != std::string::npos);
}

}  // namespace test_higher_order_cli
