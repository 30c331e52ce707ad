// tests/examples/test_nw_regression_cli.cpp — the nw_regression program as a
// user runs it: the report, the --json line, every SVG picture (parsed with
// expat, checked for its series, points and heatmap cells), and the one-line
// errors with exit status 2 that leave nothing behind.
//
// It runs the built binary ATTOGRAD_BINARY_DIR/examples/nw_regression, so the
// example target must be built before the tests run (CI builds everything).
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/program.hpp"
#include "tests/support/svg.hpp"

namespace test_nw_regression_cli {

namespace fs = std::filesystem;

namespace {

const fs::path kBinary = fs::path(ATTOGRAD_BINARY_DIR) / "examples" / "nw_regression";

// The picture files one run writes.
const std::vector<std::string> kPictures = {"nw_fit_average.svg",
                                            "nw_fit_nonparametric.svg",
                                            "nw_fit_learned.svg",
                                            "nw_fit_kernels.svg",
                                            "nw_loss.svg",
                                            "nw_attention_nonparametric.svg",
                                            "nw_attention_learned.svg",
                                            "nw_kernels.svg"};

namespace support = attograd::testing;
using support::lines_of;
using support::read_file;
using support::TemporaryFolder;
using Run = support::ProgramRun;
const support::Program run(kBinary);

// What the checks need from a parsed SVG: per series (data-name) its kind and
// how many points or circles it has, the text, and the heatmap's cell count.
struct Picture {
  std::string error;  // empty when well-formed
  std::string root;
  std::map<std::string, std::string> series_kind;
  std::map<std::string, std::size_t> series_points;
  std::vector<std::string> texts;
  std::size_t heatmap_cells = 0;
  bool has_colorbar = false;
  bool has_legend = false;

  bool has_text(const std::string& needle) const {
    for (const std::string& text : texts) {
      if (text.find(needle) != std::string::npos) return true;
    }
    return false;
  }
  bool has_exact_text(const std::string& wanted) const {
    for (const std::string& text : texts) {
      if (text == wanted) return true;
    }
    return false;
  }
};

Picture parse_picture(const std::string& svg) {
  const support::ParsedSvg parsed = support::parse_svg(svg);
  Picture picture;
  picture.error = parsed.error;
  if (!parsed.elements.empty()) picture.root = parsed.elements.front().tag;
  for (const support::Element& element : parsed.elements) {
    const bool in_heatmap = !element.groups.empty() && element.groups.back().find("heatmap") == 0;
    if (element.tag == "g") {
      const std::string group_class = element.attribute("class");
      if (group_class == "colorbar") picture.has_colorbar = true;
      if (group_class == "legend") picture.has_legend = true;
      if (group_class != "series") continue;
      // A series' points: the points of its polylines and its circles.
      const std::string name = element.attribute("data-name");
      picture.series_kind[name] = element.attribute("data-kind");
      std::size_t count = parsed.count_in_series(name, "circle");
      for (const support::Element* line : parsed.in_series(name, "polyline")) {
        std::istringstream points(line->attribute("points"));
        for (std::string point; points >> point;) ++count;
      }
      picture.series_points[name] = count;
    } else if (element.tag == "rect" && in_heatmap) {
      ++picture.heatmap_cells;
    } else if (element.tag == "text" || element.tag == "tspan") {
      picture.texts.push_back(element.text);
    }
  }
  return picture;
}

Picture load_picture(const fs::path& path) {
  INFO(path.string());
  REQUIRE(fs::exists(path));
  Picture picture = parse_picture(read_file(path));
  REQUIRE(picture.error == "");
  REQUIRE(picture.root == "svg");
  return picture;
}

// A fit picture: the truth and the prediction over the 60 test inputs, the
// 50 training samples scattered, and a legend.
void check_fit(const Picture& picture, const std::string& prediction) {
  INFO("prediction series " << prediction);
  REQUIRE(picture.series_kind.count("Truth") == 1);
  REQUIRE(picture.series_kind.count(prediction) == 1);
  REQUIRE(picture.series_kind.count("Training samples") == 1);
  CHECK(picture.series_kind.at("Truth") == "line");
  CHECK(picture.series_kind.at(prediction) == "line");
  CHECK(picture.series_kind.at("Training samples") == "scatter");
  CHECK(picture.series_points.at("Truth") == 60);
  CHECK(picture.series_points.at(prediction) == 60);
  CHECK(picture.series_points.at("Training samples") == 50);
  CHECK(picture.has_legend);
  CHECK(picture.has_exact_text("x"));  // the axis labels
  CHECK(picture.has_exact_text("y"));
  CHECK(picture.has_text("test MSE"));  // in the title
}

}  // namespace

TEST_CASE("nw_regression writes the report and eight legible pictures", "[nw_regression][cli]") {
  TemporaryFolder folder;
  const fs::path out = folder.path / "pictures" / "nested";  // created, parents too
  const Run result = run({"--epochs", "5", "--seed", "3", "--out", out.string()}, folder.path);
  INFO(result.err);
  REQUIRE(result.status == 0);
  CHECK(result.err.empty());

  // Not a terminal: one plain line per epoch, then the test errors.
  const std::vector<std::string> lines = lines_of(result.out);
  std::vector<std::string> epoch_lines;
  for (const std::string& line : lines) {
    if (line.rfind("epoch ", 0) == 0) epoch_lines.push_back(line);
  }
  REQUIRE(epoch_lines.size() == 5);
  CHECK(epoch_lines[0].rfind("epoch 1, loss ", 0) == 0);
  CHECK(epoch_lines[4].rfind("epoch 5, loss ", 0) == 0);
  CHECK(result.out.find('\r') == std::string::npos);
  for (const char* needle : {"average pooling", "attention pooling (Gaussian, σ = 1)",
                             "Nadaraya–Watson, boxcar", "Nadaraya–Watson, epanechnikov",
                             "learned attention (scalar w, 5 epochs)", "ms of compute"}) {
    INFO(needle);
    CHECK(result.out.find(needle) != std::string::npos);
  }

  for (const std::string& name : kPictures) {
    INFO(name);
    CHECK(fs::exists(out / name));
  }
  // Atomic writes leave no temporary files behind: the pictures and report.html only.
  for (const auto& entry : fs::directory_iterator(out)) {
    INFO(entry.path().string());
    CHECK((entry.path().extension() == ".svg" || entry.path().filename() == "report.html"));
  }
  CHECK(fs::exists(out / "report.html"));

  check_fit(load_picture(out / "nw_fit_average.svg"), "Average pooling");
  check_fit(load_picture(out / "nw_fit_nonparametric.svg"), "Gaussian kernel");
  check_fit(load_picture(out / "nw_fit_learned.svg"), "Learned attention (scalar w)");

  const Picture kernels_fit = load_picture(out / "nw_fit_kernels.svg");
  CHECK(kernels_fit.series_kind.size() == 5);  // truth, three kernels, samples
  CHECK(kernels_fit.has_text("Gaussian (MSE"));
  CHECK(kernels_fit.has_text("Boxcar (MSE"));
  CHECK(kernels_fit.has_text("Epanechnikov (MSE"));

  const Picture loss = load_picture(out / "nw_loss.svg");
  REQUIRE(loss.series_points.count("Training loss") == 1);
  CHECK(loss.series_points.at("Training loss") == 5);
  CHECK(loss.has_exact_text("Epoch"));

  for (const char* name : {"nw_attention_nonparametric.svg", "nw_attention_learned.svg"}) {
    INFO(name);
    const Picture heatmap = load_picture(out / name);
    CHECK(heatmap.heatmap_cells == 60 * 50);  // test inputs × training inputs
    CHECK(heatmap.has_colorbar);
    CHECK(heatmap.has_text("Test inputs (queries)"));
    CHECK(heatmap.has_text("Sorted training inputs (keys)"));
    CHECK(heatmap.has_text("Attention weight"));
  }

  const Picture shapes = load_picture(out / "nw_kernels.svg");
  for (const char* kernel : {"Gaussian", "Boxcar", "Epanechnikov"}) {
    INFO(kernel);
    REQUIRE(shapes.series_kind.count(kernel) == 1);
    CHECK(shapes.series_points.at(kernel) > 100);
  }
}

TEST_CASE("nw_regression --json prints one summary line", "[nw_regression][cli]") {
  TemporaryFolder folder;
  const Run scalar = run({"--json", "--epochs", "20", "--out", folder.path.string()}, folder.path);
  INFO(scalar.err);
  REQUIRE(scalar.status == 0);
  REQUIRE(lines_of(scalar.out).size() == 1);
  const nlohmann::json summary = nlohmann::json::parse(scalar.out);
  for (const char* estimator : {"average", "attention", "kernel", "learned"}) {
    INFO(estimator);
    REQUIRE(summary["mse"].contains(estimator));
    CHECK(summary["mse"][estimator].get<double>() > 0);
  }
  CHECK(summary["mse"]["average"].get<double>() > summary["mse"]["learned"].get<double>());
  CHECK(summary["kernel_mse"].size() == 3);
  CHECK(summary["final_loss"].get<double>() > 0);
  CHECK(summary["w"].is_number());
  CHECK(summary["w_mean"].get<double>() == summary["w"].get<double>());
  CHECK(summary["train_ms"].get<double>() >= 0);
  CHECK(summary["epochs"] == 20);

  // The same seed gives the same numbers; the vector w has n − 1 = 49 entries
  // and its heatmap has 49 key columns.
  const Run again = run({"--json", "--epochs", "20", "--out", folder.path.string()}, folder.path);
  const nlohmann::json repeated = nlohmann::json::parse(again.out);
  CHECK(repeated["mse"] == summary["mse"]);
  CHECK(repeated["w"] == summary["w"]);

  const Run vector =
      run({"--json", "--w", "vector", "--epochs", "5", "--out", folder.path.string()}, folder.path);
  REQUIRE(vector.status == 0);
  const nlohmann::json vector_summary = nlohmann::json::parse(vector.out);
  REQUIRE(vector_summary["w"].is_array());
  CHECK(vector_summary["w"].size() == 49);
  CHECK(load_picture(folder.path / "nw_attention_learned.svg").heatmap_cells == 60 * 49);
}

TEST_CASE("nw_regression refuses bad input with one line, status 2, nothing written",
          "[nw_regression][cli]") {
  TemporaryFolder folder;
  const fs::path out = folder.path / "never";
  struct Case {
    std::vector<std::string> arguments;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--epochs", "0"}, "error: --epochs: expected a positive integer at most 100000, got '0'"},
      {{"--bandwidth", "0"}, "error: --bandwidth: expected a positive number, got '0'"},
      {{"--bandwidth", "-0.5"}, "error: --bandwidth: expected a positive number, got '-0.5'"},
      {{"--kernel", "cubic"},
       "error: --kernel: 'cubic' is not one of gaussian|boxcar|epanechnikov"},
      {{"--w", "matrix"}, "error: --w: 'matrix' is not one of scalar|vector"},
      {{"--lr", "-1"}, "error: --lr: expected a positive number, got '-1'"},
  };
  for (const Case& each : cases) {
    std::vector<std::string> arguments = {"--out", out.string()};
    arguments.insert(arguments.end(), each.arguments.begin(), each.arguments.end());
    INFO(each.message);
    const Run result = run(arguments, folder.path);
    CHECK(result.status == 2);
    CHECK(result.out.empty());
    CHECK(lines_of(result.err) == std::vector<std::string>{each.message});
    CHECK_FALSE(fs::exists(out));
  }

  // An output folder that cannot be created: a path through a regular file.
  const fs::path file = folder.path / "a_file";
  std::ofstream(file) << "not a folder";
  const Run blocked = run({"--out", (file / "pictures").string()}, folder.path);
  CHECK(blocked.status == 2);
  CHECK(blocked.out.empty());
  REQUIRE(lines_of(blocked.err).size() == 1);
  CHECK(blocked.err.rfind("error: --out '" + (file / "pictures").string() +
                              "': cannot create the folder: '" + file.string() +
                              "' is a file, not a folder",
                          0) == 0);
  CHECK(read_file(file) == "not a folder");
}

TEST_CASE("nw_regression --help lists every flag and its choices", "[nw_regression][cli]") {
  TemporaryFolder folder;
  const Run result = run({"--help"}, folder.path);
  REQUIRE(result.status == 0);
  for (const char* flag : {"--seed", "--epochs", "--lr", "--kernel <gaussian|boxcar|epanechnikov>",
                           "--bandwidth", "--w <scalar|vector>", "--out", "--json", "--seeds"}) {
    INFO(flag);
    CHECK(result.out.find(flag) != std::string::npos);
  }
}

TEST_CASE("nw_regression --seeds averages over seeds without drawing", "[nw_regression][cli]") {
  TemporaryFolder folder;
  const fs::path out = folder.path / "unused";
  const Run result =
      run({"--seeds", "3", "--epochs", "5", "--json", "--out", out.string()}, folder.path);
  INFO(result.err);
  REQUIRE(result.status == 0);
  const nlohmann::json summary = nlohmann::json::parse(result.out);
  CHECK(summary["seeds"] == 3);
  CHECK(summary["mse"].size() == 7);  // average, attention, three kernels, two learned
  CHECK_FALSE(fs::exists(out));
}

}  // namespace test_nw_regression_cli
