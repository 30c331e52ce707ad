// tests/examples/test_svg_plot.cpp — the SVG charts: every picture must parse
// as XML (checked with expat, a real parser), contain the series, labels and
// ticks asked for, and escape text.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "plot/svg_plot.hpp"
#include "tensor/error.hpp"
#include "tests/support/svg.hpp"

namespace test_svg_plot {

namespace plot = attograd::plot;

using attograd::testing::Element;
using attograd::testing::parse_svg;
using attograd::testing::ParsedSvg;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Parses and requires well-formed XML whose root is <svg>.
ParsedSvg parse_valid(const std::string& svg) {
  ParsedSvg parsed = parse_svg(svg);
  INFO(svg);
  REQUIRE(parsed.error == "");
  REQUIRE(!parsed.elements.empty());
  REQUIRE(parsed.elements[0].tag == "svg");
  return parsed;
}

bool contains(const std::vector<std::string>& texts, const std::string& text) {
  return std::find(texts.begin(), texts.end(), text) != texts.end();
}

// A fresh folder under the system's temporary folder, removed afterwards.
struct TemporaryFolder {
  std::filesystem::path path;
  TemporaryFolder() {
    path =
        std::filesystem::temp_directory_path() / fmt::format("attograd_plot_test_{}", ::getpid());
    std::filesystem::create_directories(path);
  }
  ~TemporaryFolder() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
};

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST_CASE("the test's XML checker rejects malformed SVG", "[plot]") {
  CHECK(parse_svg("<svg><g></svg>").error.find("line 1") != std::string::npos);
  CHECK(parse_svg("<svg>\n<text>a & b</text></svg>").error.find("line 2") != std::string::npos);
  CHECK(parse_svg("<svg><text>a &amp; b</text></svg>").error == "");
}

TEST_CASE("nice ticks step by 1, 2 or 5 times a power of ten", "[plot]") {
  CHECK(plot::nice_step(0, 1, 5) == Approx(0.2));
  CHECK(plot::nice_step(0, 100, 5) == Approx(20));
  CHECK(plot::nice_step(0, 7, 7) == Approx(1));
  CHECK(plot::nice_step(0, 0.03, 3) == Approx(0.01));
  CHECK(plot::nice_step(-3.7, 12.2, 6) == Approx(5));

  const std::vector<double> unit = plot::nice_ticks(0, 1, 5);
  REQUIRE(unit.size() == 6);
  for (std::size_t i = 0; i < unit.size(); ++i) CHECK(unit[i] == Approx(0.2 * i).margin(1e-12));
  CHECK(plot::nice_ticks(-3.7, 12.2, 6) == std::vector<double>{0, 5, 10});
  CHECK(plot::nice_ticks(-1, 1, 2) == std::vector<double>{-1, 0, 1});
  CHECK(plot::nice_ticks(2, 2, 5) == std::vector<double>{2});
  CHECK(plot::nice_ticks(0, kInf, 5).empty());
  CHECK(plot::nice_ticks(kNaN, 1, 5).empty());
  CHECK(plot::nice_ticks(1, 0, 5).empty());
  CHECK_THROWS_AS(plot::nice_step(1, 1, 5), attograd::Error);
}

TEST_CASE("tick labels have the decimals their step needs", "[plot]") {
  CHECK(plot::format_tick(3, 1) == "3");
  CHECK(plot::format_tick(0.5, 0.1) == "0.5");
  CHECK(plot::format_tick(0.25, 0.05) == "0.25");
  CHECK(plot::format_tick(0.30000000000000004, 0.1) == "0.3");
  CHECK(plot::format_tick(-2, 0.5) == "-2.0");
  CHECK(plot::format_tick(-1e-17, 0.1) == "0.0");  // never "-0.0"
  CHECK(plot::format_tick(150, 50) == "150");
  CHECK(plot::format_tick(1.5e6, 5e5) == "1.5e6");
  CHECK(plot::format_tick(2e6, 1e6) == "2e6");
  CHECK(plot::format_tick(0, 1e6) == "0");
  CHECK(plot::format_tick(3e-6, 5e-7) == "3e-6");
  CHECK(plot::format_tick(2.5e-6, 5e-7) == "2.5e-6");
}

TEST_CASE("xml_escape escapes the five special characters and drops control bytes", "[plot]") {
  CHECK(plot::xml_escape("a<b & \"c\" 'd'>") == "a&lt;b &amp; &quot;c&quot; &apos;d&apos;&gt;");
  CHECK(plot::xml_escape("tab\tok\x01\x1f") == "tab\tok");
  CHECK(plot::xml_escape("fatigué") == "fatigué");
}

TEST_CASE("colour maps interpolate between their anchors", "[plot]") {
  const plot::Colormap viridis = plot::Colormap::viridis();
  CHECK(viridis.at(0).hex() == "#440154");
  CHECK(viridis.at(1).hex() == "#fde725");
  CHECK(viridis.at(0.5).hex() == "#21908c");  // the middle of nine anchors
  CHECK(viridis.at(-3) == viridis.at(0));
  CHECK(viridis.at(7) == viridis.at(1));
  CHECK(viridis.at(kNaN) == viridis.at(0));
  CHECK(plot::Colormap::reds().at(0).hex() == "#fff5f0");
  CHECK(plot::Colormap::reds().at(1).hex() == "#67000d");

  const plot::Colormap grey({{0, 0, 0}, {200, 100, 50}});
  CHECK(grey.at(0.5) == plot::Color{100, 50, 25});
  CHECK(grey.at(0.25).hex() == "#32190d");  // 50, 25, 12.5 rounds to 13
  CHECK_THROWS_AS(plot::Colormap({{1, 2, 3}}), attograd::Error);

  // Brightness rises monotonically along viridis (it is perceptually ordered).
  double previous = -1;
  for (int i = 0; i <= 20; ++i) {
    const plot::Color c = viridis.at(i / 20.0);
    const double luma = 0.2126 * c.red + 0.7152 * c.green + 0.0722 * c.blue;
    CHECK(luma > previous);
    previous = luma;
  }
}

TEST_CASE("the series palette cycles", "[plot]") {
  CHECK(plot::palette_color(0).hex() == "#0072b2");
  CHECK(plot::palette_color(1) != plot::palette_color(0));
  CHECK(plot::palette_color(8) == plot::palette_color(0));
}

TEST_CASE("a line chart holds its series, legend, ticks and labels", "[plot]") {
  std::vector<double> x, truth, prediction;
  for (int i = 0; i <= 50; ++i) {
    x.push_back(i * 0.1);
    truth.push_back(2 * std::sin(i * 0.1));
    prediction.push_back(1.8 * std::sin(i * 0.1) + 0.1);
  }
  plot::LineChart chart;
  chart.title("Kernel regression: a < b & \"c\"")
      .x_label("x")
      .y_label("y")
      .line("Truth", x, truth)
      .line("Pred <dashed>", x, prediction, {.dashed = true})
      .scatter("Samples", {0.5, 1.5, 2.5}, {1, 2, 0}, {.alpha = 0.5});
  const std::string svg = chart.to_svg();
  const ParsedSvg parsed = parse_valid(svg);

  CHECK(parsed.elements[0].attribute("width") == "640");
  CHECK(parsed.elements[0].attribute("height") == "420");
  CHECK(parsed.elements[0].attribute("font-family") == "sans-serif");
  CHECK(parsed.has_text("Kernel regression: a < b & \"c\""));  // escaped, then parsed back
  CHECK(svg.find("a &lt; b &amp; &quot;c&quot;") != std::string::npos);

  REQUIRE(parsed.series("Truth") != nullptr);
  REQUIRE(parsed.series("Pred <dashed>") != nullptr);
  REQUIRE(parsed.series("Samples") != nullptr);
  CHECK(parsed.series("Truth")->attribute("data-kind") == "line");
  CHECK(parsed.series("Samples")->attribute("data-kind") == "scatter");
  CHECK(parsed.count_in_series("Truth", "polyline") == 1);
  CHECK(parsed.count_in_series("Samples", "circle") == 3);
  const auto polylines = parsed.all("polyline");
  REQUIRE(polylines.size() == 2);
  CHECK(polylines[0]->attribute("stroke") == plot::palette_color(0).hex());
  CHECK(polylines[1]->attribute("stroke-dasharray") != "");
  CHECK(parsed.all_in("series", "circle")[0]->attribute("fill-opacity") == "0.5");

  const std::vector<std::string> legend = parsed.texts_in("legend");
  CHECK(legend == std::vector<std::string>{"Truth", "Pred <dashed>", "Samples"});
  const std::vector<std::string> x_ticks = parsed.texts_in("x-axis");
  for (const char* tick : {"0", "1", "2", "3", "4", "5", "x"}) {
    CHECK(contains(x_ticks, tick));
  }
  const std::vector<std::string> y_ticks = parsed.texts_in("y-axis");
  for (const char* tick : {"-2", "-1", "0", "1", "2", "y"}) CHECK(contains(y_ticks, tick));
  CHECK(parsed.all_in("grid", "line").size() >= 10);
}

TEST_CASE("a line chart skips NaN and infinite points", "[plot]") {
  plot::LineChart chart;
  chart.line("gappy", {0, 1, 2, 3, 4, 5, 6}, {0, 1, kNaN, 3, 4, kInf, 6})
      .scatter("dots", {0, kNaN, 2, -kInf}, {1, 1, 2, 2});
  const ParsedSvg parsed = parse_valid(chart.to_svg());
  // Runs {0, 1} and {3, 4} are lines; the lone {6} becomes a dot.
  CHECK(parsed.count_in_series("gappy", "polyline") == 2);
  CHECK(parsed.count_in_series("gappy", "circle") == 1);
  CHECK(parsed.count_in_series("dots", "circle") == 2);
  // The y axis fits the finite values only.
  CHECK(contains(parsed.texts_in("y-axis"), "6"));
  CHECK(!contains(parsed.texts_in("y-axis"), "inf"));
}

TEST_CASE("a line chart survives a single point, a constant and an empty series", "[plot]") {
  SECTION("single point") {
    plot::LineChart chart;
    chart.line("one", {2}, {3});
    const ParsedSvg parsed = parse_valid(chart.to_svg());
    CHECK(parsed.count_in_series("one", "circle") == 1);
    CHECK(parsed.texts_in("x-axis").size() >= 2);
    CHECK(parsed.texts_in("y-axis").size() >= 2);
  }
  SECTION("constant series") {
    plot::LineChart chart;
    chart.line("flat", {0, 1, 2}, {5, 5, 5});
    const ParsedSvg parsed = parse_valid(chart.to_svg());
    const std::vector<std::string> y_ticks = parsed.texts_in("y-axis");
    CHECK(y_ticks.size() >= 3);
    CHECK(contains(y_ticks, "5.0"));
    CHECK(parsed.count_in_series("flat", "polyline") == 1);
  }
  SECTION("constant zero series") {
    plot::LineChart chart;
    chart.line("zero", {0, 1}, {0, 0});
    CHECK(contains(parse_valid(chart.to_svg()).texts_in("y-axis"), "0.0"));
  }
  SECTION("empty series and an empty chart") {
    plot::LineChart chart;
    chart.line("nothing", {}, {});
    const ParsedSvg parsed = parse_valid(chart.to_svg());
    REQUIRE(parsed.series("nothing") != nullptr);
    CHECK(parsed.count_in_series("nothing", "polyline") == 0);
    CHECK(contains(parsed.texts_in("x-axis"), "0.0"));
    CHECK(contains(parsed.texts_in("x-axis"), "1.0"));

    const ParsedSvg blank = parse_valid(plot::LineChart().to_svg());
    CHECK(blank.all_in("legend", "text").empty());
    CHECK(blank.all("polyline").empty());
  }
}

TEST_CASE("line chart limits, legend position, size and bad input", "[plot]") {
  plot::LineChart chart;
  chart.x_limits(0, 10).y_limits(-1, 1).size(800, 300).legend(plot::LegendPosition::hidden);
  chart.line("wide", {-5, 0, 20}, {-3, 0, 3});
  const ParsedSvg parsed = parse_valid(chart.to_svg());
  CHECK(parsed.elements[0].attribute("width") == "800");
  CHECK(parsed.all_in("legend", "text").empty());
  CHECK(parsed.texts_in("x-axis").front() == "0");
  CHECK(parsed.texts_in("x-axis").back() == "10");
  CHECK(parsed.texts_in("y-axis").front() == "-1.0");
  CHECK(parsed.texts_in("y-axis").back() == "1.0");
  CHECK(parsed.all("clipPath").size() == 1);  // points outside the limits are clipped

  CHECK_THROWS_WITH(plot::LineChart().line("bad", {1, 2}, {1}),
                    "LineChart: series 'bad' has 2 x values but 1 y values");
  CHECK_THROWS_AS(plot::LineChart().x_limits(1, 1), attograd::Error);
  CHECK_THROWS_AS(plot::LineChart().y_limits(0, kNaN), attograd::Error);
  CHECK_THROWS_AS(plot::LineChart().scatter("a", {1}, {1}, {.alpha = 2}), attograd::Error);
  CHECK_THROWS_AS(plot::LineChart().size(10, 10), attograd::Error);
}

TEST_CASE("a heatmap with word labels, as for attention weights", "[plot]") {
  const std::vector<std::string> queries = {"je", "suis", "<eos>"};
  const std::vector<std::string> keys = {"i", "am", "internationalisation", "<eos>"};
  std::vector<double> weights = {0.7, 0.1, 0.1, 0.1,  //
                                 0.1, 0.6, 0.2, 0.1,  //
                                 0.0, 0.0, 0.2, 0.8};
  plot::Heatmap heatmap(3, 4, weights);
  heatmap.title("Attention")
      .row_labels(queries)
      .column_labels(keys)
      .x_label("Keys")
      .y_label("Queries")
      .value_limits(0, 1)
      .colorbar_label("weight");
  const ParsedSvg parsed = parse_valid(heatmap.to_svg());

  const auto cells = parsed.all_in("heatmap", "rect");
  REQUIRE(cells.size() == 12);
  const plot::Colormap viridis = plot::Colormap::viridis();
  CHECK(cells[0]->attribute("fill") == viridis.at(0.7).hex());
  CHECK(cells[8]->attribute("fill") == viridis.at(0).hex());
  CHECK(cells[11]->attribute("fill") == viridis.at(0.8).hex());

  const std::vector<std::string> rows = parsed.texts_in("row-labels");
  for (const std::string& word : queries) CHECK(contains(rows, word));
  CHECK(contains(rows, "Queries"));
  const std::vector<std::string> columns = parsed.texts_in("column-labels");
  for (const std::string& word : keys) CHECK(contains(columns, word));
  // "internationalisation" does not fit in a cell, so the column labels turn.
  for (const Element* text : parsed.all_in("column-labels", "text")) {
    if (text->text != "Keys") CHECK(text->attribute("transform").find("rotate(-45") == 0);
  }
  CHECK(parsed.has_text("Attention"));

  const std::vector<std::string> bar = parsed.texts_in("colorbar");
  for (const char* tick : {"0.0", "0.2", "0.4", "0.6", "0.8", "1.0", "weight"}) {
    CHECK(contains(bar, tick));
  }
  const auto stops = parsed.all_in("colorbar", "stop");
  REQUIRE(stops.size() == viridis.anchors().size());
  CHECK(stops.front()->attribute("stop-color") == "#440154");
  CHECK(stops.back()->attribute("stop-color") == "#fde725");
}

TEST_CASE("short column labels stay horizontal", "[plot]") {
  plot::Heatmap heatmap(std::vector<std::vector<double>>{{1, 2}, {3, 4}});
  heatmap.column_labels({"a", "b"}).row_labels({"c", "d"});
  const ParsedSvg parsed = parse_valid(heatmap.to_svg());
  for (const Element* text : parsed.all_in("column-labels", "text")) {
    CHECK(text->attribute("transform") == "");
  }
  // Without limits the colours span the data: 1 is the low end, 4 the high.
  const auto cells = parsed.all_in("heatmap", "rect");
  CHECK(cells[0]->attribute("fill") == "#440154");
  CHECK(cells[3]->attribute("fill") == "#fde725");
}

TEST_CASE("a heatmap with numeric axes, as for kernel regression", "[plot]") {
  // Rows: 50 test inputs 0, 0.1, ..., 4.9. Columns: 40 sorted training inputs.
  std::vector<double> test_inputs, training_inputs, weights;
  for (int i = 0; i < 50; ++i) test_inputs.push_back(i * 0.1);
  for (int j = 0; j < 40; ++j) training_inputs.push_back(5.0 * j * j / (39.0 * 39.0));
  for (const double query : test_inputs) {
    for (const double key : training_inputs)
      weights.push_back(std::exp(-(query - key) * (query - key) / 2));
  }
  plot::Heatmap heatmap(50, 40, weights);
  heatmap.row_values(test_inputs)
      .column_values(training_inputs)
      .x_label("Sorted training inputs")
      .y_label("Sorted testing inputs")
      .colormap(plot::Colormap::reds());
  const ParsedSvg parsed = parse_valid(heatmap.to_svg());
  CHECK(parsed.all_in("heatmap", "rect").size() == 2000);
  CHECK(parsed.texts_in("y-axis") ==
        std::vector<std::string>{"0", "1", "2", "3", "4", "Sorted testing inputs"});
  const std::vector<std::string> x_ticks = parsed.texts_in("x-axis");
  for (const char* tick : {"0", "2", "4", "Sorted training inputs"}) {
    CHECK(contains(x_ticks, tick));
  }
  CHECK(parsed.all_in("colorbar", "stop").front()->attribute("stop-color") == "#fff5f0");

  // The "2" tick on the x axis sits between the columns whose values bracket 2.
  const std::size_t after = static_cast<std::size_t>(
      std::lower_bound(training_inputs.begin(), training_inputs.end(), 2.0) -
      training_inputs.begin());
  const auto cells = parsed.all_in("heatmap", "rect");
  const double left_edge = std::stod(cells[after - 1]->attribute("x"));
  const double right_edge =
      std::stod(cells[after]->attribute("x")) + std::stod(cells[1]->attribute("width"));
  for (const Element* text : parsed.all_in("x-axis", "text")) {
    if (text->text == "2") {
      const double x = std::stod(text->attribute("x"));
      CHECK(x > left_edge);
      CHECK(x < right_edge);
    }
  }
}

TEST_CASE("a heatmap without labels ticks the row and column numbers", "[plot]") {
  std::vector<double> values(30 * 30);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<double>(i);
  values[5] = kNaN;
  const ParsedSvg parsed = parse_valid(plot::Heatmap(30, 30, values).to_svg());
  const std::vector<std::string> every_fifth = {"0", "5", "10", "15", "20", "25"};
  CHECK(parsed.texts_in("x-axis") == every_fifth);
  CHECK(parsed.texts_in("y-axis") == every_fifth);
  CHECK(parsed.all_in("heatmap", "rect")[5]->attribute("fill") == "#d0d0d0");  // missing value

  const ParsedSvg single = parse_valid(plot::Heatmap(1, 1, {3.0}).to_svg());
  CHECK(single.all_in("heatmap", "rect").size() == 1);
  CHECK(single.texts_in("x-axis") == std::vector<std::string>{"0"});
}

TEST_CASE("heatmap input is checked", "[plot]") {
  CHECK_THROWS_WITH(plot::Heatmap(2, 3, {1, 2, 3}), "Heatmap: 2 x 3 needs 6 values, got 3");
  CHECK_THROWS_AS(plot::Heatmap(0, 3, {}), attograd::Error);
  CHECK_THROWS_WITH(plot::Heatmap(std::vector<std::vector<double>>{{1, 2}, {3}}),
                    "Heatmap: row 1 has 1 values but row 0 has 2");
  plot::Heatmap heatmap(2, 3, {1, 2, 3, 4, 5, 6});
  CHECK_THROWS_WITH(heatmap.row_labels({"a"}), "Heatmap::row_labels: got 1 labels for 2 rows");
  CHECK_THROWS_AS(heatmap.column_values({1, 3, 2}), attograd::Error);
  CHECK_THROWS_AS(heatmap.column_values({1, 2, kNaN}), attograd::Error);
  CHECK_NOTHROW(heatmap.column_values({3, 2, 2}));  // decreasing is fine
  CHECK_THROWS_AS(heatmap.value_limits(1, 0), attograd::Error);
}

TEST_CASE("save writes exactly to_svg()", "[plot][io]") {
  const TemporaryFolder folder;
  plot::LineChart chart;
  chart.line("a", {0, 1}, {0, 1});
  chart.save(folder.path / "chart.svg");
  CHECK(read_file(folder.path / "chart.svg") == chart.to_svg());

  const plot::Heatmap heatmap(1, 2, {0, 1});
  heatmap.save(folder.path / "heatmap.svg");
  CHECK(read_file(folder.path / "heatmap.svg") == heatmap.to_svg());

  CHECK_THROWS_AS(chart.save(folder.path / "missing" / "chart.svg"), attograd::Error);
}

}  // namespace test_svg_plot
