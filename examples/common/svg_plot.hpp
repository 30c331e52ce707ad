// examples/common/svg_plot.hpp — small, dependency-free SVG charts for the
// example programs: line/scatter charts (loss curves, regression fits) and
// heatmaps (attention weights).
//
//   plot::LineChart chart;
//   chart.title("Nadaraya-Watson regression").x_label("x").y_label("y")
//        .line("Truth", xs, truth)
//        .line("Prediction", xs, predicted, {.dashed = true})
//        .scatter("Training samples", x_train, y_train, {.alpha = 0.5});
//   chart.save("regression.svg");
//
//   plot::Heatmap attention(query_count, key_count, weights);  // row-major
//   attention.row_labels(target_words).column_labels(source_words)
//            .x_label("Keys").y_label("Queries").value_limits(0, 1);
//   attention.save("attention.svg");
//
// Every picture is one self-contained SVG file (no scripts, no external
// fonts), written atomically. The parts are tagged so that tests and scripts
// can find them: <g class="series" data-name="Truth">, <g class="legend">,
// <g class="heatmap">, <g class="colorbar">. All text is XML-escaped; it must
// be UTF-8.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace attograd::plot {

// ---------------------------------------------------------------- colours

struct Color {
  std::uint8_t red = 0;
  std::uint8_t green = 0;
  std::uint8_t blue = 0;

  // "#rrggbb", lower-case.
  std::string hex() const;
  friend bool operator==(const Color&, const Color&) = default;
};

// The categorical palette for series: colour i of the i-th series, cycling
// after the last. The colours are the Okabe–Ito set, which stays
// distinguishable for colour-blind readers.
Color palette_color(std::size_t index);

// A colour map: t in [0, 1] -> colour, linear (in sRGB) between equally
// spaced anchor colours. A handful of anchors is enough for a smooth map.
class Colormap {
 public:
  // Needs at least two anchors: anchors.front() is t = 0, anchors.back() t = 1.
  explicit Colormap(std::vector<Color> anchors);

  // Perceptually ordered dark purple -> blue -> green -> yellow, sampled at
  // nine points of matplotlib's viridis (the default).
  static Colormap viridis();
  // White -> dark red, ColorBrewer's nine-class "Reds" (d2l's attention maps).
  static Colormap reds();

  // The colour at t; t is clamped to [0, 1] and NaN maps to 0.
  Color at(double t) const;
  const std::vector<Color>& anchors() const { return anchors_; }

 private:
  std::vector<Color> anchors_;
};

// ---------------------------------------------------------------- helpers

// Text made safe for XML content and attribute values: & < > " ' become
// entities, and control characters XML cannot carry (other than tab, newline
// and carriage return) are dropped.
std::string xml_escape(std::string_view text);

// The tick spacing for [low, high] with about `target_count` intervals: 1, 2
// or 5 times a power of ten. Requires finite low < high and target_count >= 1.
double nice_step(double low, double high, int target_count);

// The multiples of nice_step(low, high, target_count) inside [low, high],
// e.g. nice_ticks(0, 1, 5) = {0, 0.2, 0.4, 0.6, 0.8, 1}. Empty when the range
// is not finite or low > high; {low} when low == high.
std::vector<double> nice_ticks(double low, double high, int target_count);

// A tick label with as many decimals as `step` needs: format_tick(0.5, 0.1)
// = "0.5", format_tick(3, 1) = "3", format_tick(0.25, 0.05) = "0.25". Steps of
// 1e5 and above or below 1e-4 switch to exponent form: format_tick(1.5e6,
// 5e5) = "1.5e6", format_tick(3e-6, 5e-7) = "3e-6". Never prints "-0".
std::string format_tick(double value, double step);

// ---------------------------------------------------------------- line charts

// How one series of a LineChart is drawn. Every field has a default, so
// `{.dashed = true}` or `{.alpha = 0.5}` is enough at the call site.
struct SeriesStyle {
  std::optional<Color> color = std::nullopt;  // default: palette_color(position of the series)
  double alpha = 1.0;                         // opacity in [0, 1]
  double line_width = 2.0;                    // line series: stroke width in pixels
  double marker_radius = 3.0;                 // scatter series: circle radius in pixels
  bool dashed = false;                        // line series: dashed stroke
};

enum class SeriesKind { line, scatter };

enum class LegendPosition { upper_right, upper_left, lower_right, lower_left, hidden };

// x/y charts with any number of line and scatter series. Points with a NaN or
// infinite coordinate are skipped (a line is broken there). The axes fit the
// data with a 5% margin unless fixed limits are given; a constant series or a
// single point gets a non-zero range around its value, and a chart with no
// points draws empty axes over [0, 1].
class LineChart {
 public:
  LineChart& title(std::string text);
  LineChart& x_label(std::string text);
  LineChart& y_label(std::string text);
  // Fixed axis ranges; points outside are clipped. Requires finite low < high.
  LineChart& x_limits(double low, double high);
  LineChart& y_limits(double low, double high);
  // Picture size in pixels (default 640 x 420).
  LineChart& size(int width, int height);
  LineChart& legend(LegendPosition position);

  // Adds a polyline through (x[i], y[i]) in the given order. x and y must
  // have the same length. A series with an empty name gets no legend entry.
  LineChart& line(std::string name, std::vector<double> x, std::vector<double> y,
                  SeriesStyle style = {});
  // Adds one circle per point.
  LineChart& scatter(std::string name, std::vector<double> x, std::vector<double> y,
                     SeriesStyle style = {});

  std::size_t series_count() const { return series_.size(); }

  std::string to_svg() const;
  // Writes to_svg() to `path` atomically; throws attograd::Error on failure.
  void save(const std::filesystem::path& path) const;

 private:
  struct Series {
    std::string name;
    SeriesKind kind;
    std::vector<double> x;
    std::vector<double> y;
    SeriesStyle style;
  };
  LineChart& add(std::string name, SeriesKind kind, std::vector<double> x, std::vector<double> y,
                 SeriesStyle style);

  std::string title_;
  std::string x_label_;
  std::string y_label_;
  std::optional<std::pair<double, double>> x_limits_;
  std::optional<std::pair<double, double>> y_limits_;
  int width_ = 640;
  int height_ = 420;
  LegendPosition legend_ = LegendPosition::upper_right;
  std::vector<Series> series_;
};

// ---------------------------------------------------------------- heatmaps

// A matrix drawn as coloured cells, row 0 at the top, with a colour bar.
//
// Each axis is labelled in one of three ways:
//   words    row_labels / column_labels: one label per cell (attention maps;
//            column labels turn −45° when they are wider than a cell),
//   numbers  row_values / column_values: the (monotonic) value each row or
//            column stands for; sparse "nice" ticks are placed between cells
//            by interpolation (kernel regression: test inputs × training inputs),
//   indices  neither: sparse ticks at the row/column numbers 0, 10, 20, ...
// Cells are square. NaN or infinite entries are drawn grey and ignored when
// the value range is fitted.
class Heatmap {
 public:
  // `values` is row-major: entry (r, c) is values[r * cols + c].
  Heatmap(std::size_t rows, std::size_t cols, std::vector<double> values);
  // One inner vector per row; all rows must have the same length.
  explicit Heatmap(const std::vector<std::vector<double>>& matrix);

  Heatmap& title(std::string text);
  Heatmap& x_label(std::string text);
  Heatmap& y_label(std::string text);
  Heatmap& row_labels(std::vector<std::string> labels);
  Heatmap& column_labels(std::vector<std::string> labels);
  Heatmap& row_values(std::vector<double> values);
  Heatmap& column_values(std::vector<double> values);
  // The values mapped to the ends of the colour map (default: the data's
  // finite minimum and maximum). Values outside are clamped.
  Heatmap& value_limits(double low, double high);
  Heatmap& colormap(Colormap map);
  Heatmap& colorbar_label(std::string text);
  Heatmap& size(int width, int height);

  std::size_t rows() const { return rows_; }
  std::size_t cols() const { return cols_; }

  std::string to_svg() const;
  void save(const std::filesystem::path& path) const;

 private:
  std::size_t rows_;
  std::size_t cols_;
  std::vector<double> values_;
  std::string title_;
  std::string x_label_;
  std::string y_label_;
  std::string colorbar_label_;
  std::vector<std::string> row_labels_;
  std::vector<std::string> column_labels_;
  std::vector<double> row_values_;
  std::vector<double> column_values_;
  std::optional<std::pair<double, double>> value_limits_;
  Colormap colormap_ = Colormap::viridis();
  int width_ = 640;
  int height_ = 420;
};

}  // namespace attograd::plot
