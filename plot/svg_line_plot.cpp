// plot/svg_line_plot.cpp — the drawing behind LineChart
// (svg_line_plot.hpp). to_svg() lays out the frame, then draws the axes, the
// series and the legend, in that order, so later parts paint over earlier ones.
#include "plot/svg_line_plot.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "plot/svg_document.hpp"
#include "tensor/atomic_file.hpp"
#include "tensor/error.hpp"

namespace attograd::plot {

namespace detail {

// The plot area of a LineChart in pixels, the data ranges it shows and the
// ticks on its axes.
struct ChartFrame {
  std::pair<double, double> x_range;
  std::pair<double, double> y_range;
  double top = 0;  // plot area edges and size, in pixels
  double left = 0;
  double plot_width = 0;
  double plot_height = 0;
  double plot_bottom = 0;
  double plot_right = 0;
  std::vector<double> x_ticks;
  double x_step = 1;  // spacing of x_ticks, which sets their decimals
  std::vector<double> y_ticks;
  std::vector<std::string> y_tick_labels;

  // Data coordinates to pixels.
  double to_x(double x) const { return left + fraction(x, x_range) * plot_width; }
  double to_y(double y) const { return plot_bottom - fraction(y, y_range) * plot_height; }
};

}  // namespace detail

namespace {

using detail::ChartFrame;
using detail::fraction;
using detail::kFrameColor;
using detail::kLabelFont;
using detail::kTickFont;
using detail::kTickLength;
using detail::kTitleFont;
using detail::px;
using detail::Svg;
using detail::text_width;

constexpr double kLegendFont = 12;
constexpr const char* kGridColor = "#e8e8e8";

bool is_finite_point(double x, double y) { return std::isfinite(x) && std::isfinite(y); }

// One circle per finite point.
void draw_scatter_points(Svg& svg, const ChartFrame& frame, const std::vector<double>& x,
                         const std::vector<double>& y, const SeriesStyle& style,
                         const std::string& color) {
  const std::string fill = fmt::format("fill=\"{}\" fill-opacity=\"{}\"", color, style.alpha);
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (!is_finite_point(x[i], y[i])) continue;
    svg.circle(frame.to_x(x[i]), frame.to_y(y[i]), style.marker_radius, fill);
  }
}

// One polyline per run of finite points; a lone point becomes a dot.
void draw_line_runs(Svg& svg, const ChartFrame& frame, const std::vector<double>& x,
                    const std::vector<double>& y, const SeriesStyle& style,
                    const std::string& color) {
  const std::string stroke = fmt::format(
      "fill=\"none\" stroke=\"{}\" stroke-opacity=\"{}\" stroke-width=\"{}\" "
      "stroke-linejoin=\"round\" stroke-linecap=\"round\"{}",
      color, style.alpha, px(style.line_width), style.dashed ? " stroke-dasharray=\"7 4\"" : "");
  std::string points;
  std::size_t run = 0;
  double last_x = 0, last_y = 0;
  const auto flush = [&] {
    if (run == 1) {
      svg.circle(last_x, last_y, style.line_width,
                 fmt::format("fill=\"{}\" fill-opacity=\"{}\"", color, style.alpha));
    } else if (run > 1) {
      svg.raw(fmt::format("<polyline points=\"{}\" {}/>\n", points, stroke));
    }
    points.clear();
    run = 0;
  };
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (!is_finite_point(x[i], y[i])) {
      flush();
      continue;
    }
    last_x = frame.to_x(x[i]);
    last_y = frame.to_y(y[i]);
    if (run > 0) points += ' ';
    points += px(last_x) + ',' + px(last_y);
    ++run;
  }
  flush();
}

}  // namespace

// ---------------------------------------------------------------- settings

LineChart& LineChart::title(std::string text) {
  title_ = std::move(text);
  return *this;
}

LineChart& LineChart::x_label(std::string text) {
  x_label_ = std::move(text);
  return *this;
}

LineChart& LineChart::y_label(std::string text) {
  y_label_ = std::move(text);
  return *this;
}

LineChart& LineChart::x_limits(double low, double high) {
  detail::check_limits("LineChart::x_limits", low, high);
  x_limits_ = {low, high};
  return *this;
}

LineChart& LineChart::y_limits(double low, double high) {
  detail::check_limits("LineChart::y_limits", low, high);
  y_limits_ = {low, high};
  return *this;
}

LineChart& LineChart::size(int width, int height) {
  check(width >= 100 && height >= 100, "LineChart::size: {} x {} is too small (at least 100 x 100)",
        width, height);
  width_ = width;
  height_ = height;
  return *this;
}

LineChart& LineChart::legend(LegendPosition position) {
  legend_ = position;
  return *this;
}

LineChart& LineChart::line(std::string name, std::vector<double> x, std::vector<double> y,
                           SeriesStyle style) {
  return add(std::move(name), SeriesKind::line, std::move(x), std::move(y), style);
}

LineChart& LineChart::scatter(std::string name, std::vector<double> x, std::vector<double> y,
                              SeriesStyle style) {
  return add(std::move(name), SeriesKind::scatter, std::move(x), std::move(y), style);
}

LineChart& LineChart::add(std::string name, SeriesKind kind, std::vector<double> x,
                          std::vector<double> y, SeriesStyle style) {
  check(x.size() == y.size(), "LineChart: series '{}' has {} x values but {} y values", name,
        x.size(), y.size());
  check(style.alpha >= 0 && style.alpha <= 1, "LineChart: series '{}': alpha {} is not in [0, 1]",
        name, style.alpha);
  check(style.line_width > 0 && style.marker_radius > 0,
        "LineChart: series '{}': line_width and marker_radius must be positive", name);
  series_.push_back({std::move(name), kind, std::move(x), std::move(y), style});
  return *this;
}

// ---------------------------------------------------------------- drawing

std::string LineChart::to_svg() const {
  const ChartFrame frame = layout();
  Svg svg(width_, height_);
  draw_axes(svg, frame);
  draw_series(svg, frame);
  draw_legend(svg, frame);
  return std::move(svg).finish();
}

void LineChart::save(const std::filesystem::path& path) const {
  write_file_atomically(path, to_svg());
}

ChartFrame LineChart::layout() const {
  // Data extent over the finite points only.
  constexpr double kInf = std::numeric_limits<double>::infinity();
  double x_min = kInf, x_max = -kInf, y_min = kInf, y_max = -kInf;
  for (const Series& series : series_) {
    for (std::size_t i = 0; i < series.x.size(); ++i) {
      if (!is_finite_point(series.x[i], series.y[i])) continue;
      x_min = std::min(x_min, series.x[i]);
      x_max = std::max(x_max, series.x[i]);
      y_min = std::min(y_min, series.y[i]);
      y_max = std::max(y_max, series.y[i]);
    }
  }
  ChartFrame frame;
  frame.x_range = detail::fit_range(x_min, x_max, x_limits_, 0.05);
  frame.y_range = detail::fit_range(y_min, y_max, y_limits_, 0.05);

  // Margins leave room for the title, tick labels and axis labels. The left
  // margin depends on the widest y tick label, so the y ticks come first.
  frame.top = title_.empty() ? 16 : 44;
  const double bottom = 34 + (x_label_.empty() ? 0 : 22);
  frame.plot_height = std::max(10.0, height_ - frame.top - bottom);
  frame.y_ticks = nice_ticks(frame.y_range.first, frame.y_range.second,
                             std::max(2, static_cast<int>(frame.plot_height / 45)));
  const double y_step = frame.y_ticks.size() > 1 ? frame.y_ticks[1] - frame.y_ticks[0] : 1.0;
  for (const double tick : frame.y_ticks) frame.y_tick_labels.push_back(format_tick(tick, y_step));
  frame.left = 12 + (y_label_.empty() ? 0 : 22) + detail::widest(frame.y_tick_labels, kTickFont) +
               kTickLength + 4;
  const double right = 24;
  frame.plot_width = std::max(10.0, width_ - frame.left - right);
  frame.x_ticks = nice_ticks(frame.x_range.first, frame.x_range.second,
                             std::max(2, static_cast<int>(frame.plot_width / 80)));
  frame.x_step = frame.x_ticks.size() > 1 ? frame.x_ticks[1] - frame.x_ticks[0] : 1.0;
  frame.plot_bottom = frame.top + frame.plot_height;
  frame.plot_right = frame.left + frame.plot_width;
  return frame;
}

// The title, the grid, then the frame over it, then ticks and their labels.
void LineChart::draw_axes(Svg& svg, const ChartFrame& frame) const {
  const double left = frame.left, top = frame.top, bottom = frame.plot_bottom;
  if (!title_.empty()) {
    svg.text(left + frame.plot_width / 2, 28, title_, kTitleFont, "middle", 0,
             "class=\"title\" font-weight=\"bold\"");
  }

  svg.raw("<g class=\"grid\">\n");
  for (const double tick : frame.x_ticks) {
    svg.line(frame.to_x(tick), top, frame.to_x(tick), bottom, kGridColor);
  }
  for (const double tick : frame.y_ticks) {
    svg.line(left, frame.to_y(tick), frame.plot_right, frame.to_y(tick), kGridColor);
  }
  svg.raw("</g>\n");
  svg.rect(left, top, frame.plot_width, frame.plot_height,
           fmt::format("class=\"frame\" fill=\"none\" stroke=\"{}\"", kFrameColor));

  svg.raw("<g class=\"x-axis\">\n");
  for (const double tick : frame.x_ticks) {
    svg.line(frame.to_x(tick), bottom, frame.to_x(tick), bottom + kTickLength, kFrameColor);
    svg.text(frame.to_x(tick), bottom + kTickLength + 13, format_tick(tick, frame.x_step),
             kTickFont);
  }
  if (!x_label_.empty()) {
    svg.text(left + frame.plot_width / 2, bottom + 40, x_label_, kLabelFont, "middle", 0,
             "class=\"axis-label\"");
  }
  svg.raw("</g>\n<g class=\"y-axis\">\n");
  for (std::size_t i = 0; i < frame.y_ticks.size(); ++i) {
    const double y = frame.to_y(frame.y_ticks[i]);
    svg.line(left - kTickLength, y, left, y, kFrameColor);
    svg.text(left - kTickLength - 3, y + 0.35 * kTickFont, frame.y_tick_labels[i], kTickFont,
             "end");
  }
  if (!y_label_.empty()) {
    svg.text(18, top + frame.plot_height / 2, y_label_, kLabelFont, "middle", -90,
             "class=\"axis-label\"");
  }
  svg.raw("</g>\n");
}

// Every series in its own group, clipped to the plot area (fixed limits may
// cut points off).
void LineChart::draw_series(Svg& svg, const ChartFrame& frame) const {
  svg.raw("<defs><clipPath id=\"plot-area\">");
  svg.rect(frame.left, frame.top, frame.plot_width, frame.plot_height, "");
  svg.raw("</clipPath></defs>\n<g class=\"plot-area\" clip-path=\"url(#plot-area)\">\n");
  for (std::size_t s = 0; s < series_.size(); ++s) {
    const Series& series = series_[s];
    const std::string color = series.style.color.value_or(palette_color(s)).hex();
    svg.raw(fmt::format("<g class=\"series\" data-name=\"{}\" data-kind=\"{}\">\n",
                        xml_escape(series.name),
                        series.kind == SeriesKind::line ? "line" : "scatter"));
    if (series.kind == SeriesKind::scatter) {
      draw_scatter_points(svg, frame, series.x, series.y, series.style, color);
    } else {
      draw_line_runs(svg, frame, series.x, series.y, series.style, color);
    }
    svg.raw("</g>\n");
  }
  svg.raw("</g>\n");
}

// One row per named series, boxed in a corner of the plot area.
void LineChart::draw_legend(Svg& svg, const ChartFrame& frame) const {
  std::vector<std::size_t> named;
  for (std::size_t s = 0; s < series_.size(); ++s) {
    if (!series_[s].name.empty()) named.push_back(s);
  }
  if (legend_ == LegendPosition::hidden || named.empty()) return;

  constexpr double kRow = 18, kPadding = 8, kSwatch = 24, kInset = 10;
  double text_columns = 0;
  for (const std::size_t s : named) {
    text_columns = std::max(text_columns, text_width(series_[s].name, kLegendFont));
  }
  const double box_width = kPadding + kSwatch + 6 + text_columns + kPadding;
  const double box_height = 2 * kPadding + kRow * static_cast<double>(named.size()) - 4;
  const bool on_right =
      legend_ == LegendPosition::upper_right || legend_ == LegendPosition::lower_right;
  const bool on_top =
      legend_ == LegendPosition::upper_right || legend_ == LegendPosition::upper_left;
  const double box_x = on_right ? frame.plot_right - kInset - box_width : frame.left + kInset;
  const double box_y = on_top ? frame.top + kInset : frame.plot_bottom - kInset - box_height;
  svg.raw("<g class=\"legend\">\n");
  svg.rect(box_x, box_y, box_width, box_height,
           "fill=\"#ffffff\" fill-opacity=\"0.85\" stroke=\"#cccccc\" rx=\"3\"");
  for (std::size_t row = 0; row < named.size(); ++row) {
    const Series& series = series_[named[row]];
    const std::string color = series.style.color.value_or(palette_color(named[row])).hex();
    const double y = box_y + kPadding + kRow * static_cast<double>(row) + 5;
    const double swatch_x = box_x + kPadding;
    if (series.kind == SeriesKind::scatter) {
      svg.circle(
          swatch_x + kSwatch / 2, y, series.style.marker_radius + 0.5,
          fmt::format("fill=\"{}\" fill-opacity=\"{}\"", color, std::max(series.style.alpha, 0.5)));
    } else {
      svg.raw(fmt::format(
          "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"{}\"{}/>\n",
          px(swatch_x), px(y), px(swatch_x + kSwatch), px(y), color, px(series.style.line_width),
          series.style.dashed ? " stroke-dasharray=\"7 4\"" : ""));
    }
    svg.text(swatch_x + kSwatch + 6, y + 0.35 * kLegendFont, series.name, kLegendFont, "start");
  }
  svg.raw("</g>\n");
}

}  // namespace attograd::plot
