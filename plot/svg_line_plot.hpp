// plot/svg_line_plot.hpp — x/y charts with line and scatter series
// (loss curves, regression fits). Part of svg_plot.hpp, which has an example.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "plot/svg_scales.hpp"

namespace attograd::plot {

namespace detail {
class Svg;
struct ChartFrame;  // where a LineChart's plot area, axes and ticks go (svg_line_plot.cpp)
}  // namespace detail

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

  // The steps of to_svg(): place the plot area, then draw onto it in order.
  detail::ChartFrame layout() const;
  void draw_axes(detail::Svg& svg, const detail::ChartFrame& frame) const;
  void draw_series(detail::Svg& svg, const detail::ChartFrame& frame) const;
  void draw_legend(detail::Svg& svg, const detail::ChartFrame& frame) const;

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

}  // namespace attograd::plot
