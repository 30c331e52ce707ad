// examples/common/svg_plot.cpp — the drawing behind svg_plot.hpp.
//
// Coordinates: SVG puts (0, 0) at the top-left corner with y growing down, so
// a data value y maps to plot_bottom − (y − y_low) / (y_high − y_low) · height.
// Text widths are estimated (about 0.55 em per character of a sans-serif
// font); that is only used to leave room for labels, so rough is fine.
#include "examples/common/svg_plot.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>

#include "tensor/atomic_file.hpp"
#include "tensor/error.hpp"

namespace attograd::plot {

namespace {

constexpr double kTitleFont = 16;
constexpr double kLabelFont = 13;
constexpr double kTickFont = 11;
constexpr double kLegendFont = 12;
constexpr double kTickLength = 5;
constexpr const char* kTextColor = "#222222";
constexpr const char* kFrameColor = "#555555";
constexpr const char* kGridColor = "#e8e8e8";
constexpr const char* kMissingColor = "#d0d0d0";

// A pixel coordinate with at most two decimals and no trailing zeros.
// Clamped so that a point far outside fixed limits still gives a number
// every renderer accepts (it is clipped anyway).
std::string px(double value) {
  if (!std::isfinite(value)) value = 0;
  value = std::clamp(value, -1e6, 1e6);
  std::string text = fmt::format("{:.2f}", value);
  while (text.back() == '0') text.pop_back();
  if (text.back() == '.') text.pop_back();
  if (text == "-0") text = "0";
  return text;
}

// Estimated rendered width of UTF-8 `text`: code points × 0.55 em.
double text_width(std::string_view text, double font_size) {
  const auto code_points = std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  });
  return static_cast<double>(code_points) * 0.55 * font_size;
}

double widest(const std::vector<std::string>& texts, double font_size) {
  double width = 0;
  for (const std::string& text : texts) width = std::max(width, text_width(text, font_size));
  return width;
}

// The SVG being built. Each call appends one element.
class Svg {
 public:
  Svg(int width, int height) {
    out_ += fmt::format(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
        "viewBox=\"0 0 {0} {1}\" font-family=\"sans-serif\" fill=\"{2}\">\n"
        "<rect class=\"background\" x=\"0\" y=\"0\" width=\"{0}\" height=\"{1}\" "
        "fill=\"#ffffff\"/>\n",
        width, height, kTextColor);
  }

  // Text whose baseline starts (anchor "start"), is centred on ("middle") or
  // ends ("end") at x. `rotate` turns it by that many degrees about (x, y).
  void text(double x, double y, std::string_view content, double font_size,
            std::string_view anchor = "middle", double rotate = 0,
            std::string_view extra_attributes = "") {
    out_ += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"{}\" text-anchor=\"{}\"", px(x), px(y),
                        px(font_size), anchor);
    if (rotate != 0)
      out_ += fmt::format(" transform=\"rotate({} {} {})\"", px(rotate), px(x), px(y));
    if (!extra_attributes.empty()) out_ += fmt::format(" {}", extra_attributes);
    out_ += fmt::format(">{}</text>\n", xml_escape(content));
  }

  void line(double x1, double y1, double x2, double y2, std::string_view stroke,
            double stroke_width = 1) {
    out_ += fmt::format(
        "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"{}\"/>\n",
        px(x1), px(y1), px(x2), px(y2), stroke, px(stroke_width));
  }

  void rect(double x, double y, double width, double height, std::string_view attributes) {
    out_ += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" {}/>\n", px(x), px(y),
                        px(width), px(height), attributes);
  }

  void circle(double x, double y, double radius, std::string_view attributes) {
    out_ += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"{}\" {}/>\n", px(x), px(y), px(radius),
                        attributes);
  }

  // Raw markup: group tags, definitions.
  void raw(std::string_view markup) { out_ += markup; }

  std::string finish() && {
    out_ += "</svg>\n";
    return std::move(out_);
  }

 private:
  std::string out_;
};

// The axis range for data spanning [min, max]: fixed limits if given;
// otherwise the data plus a 5% margin, widened around a constant value, and
// [0, 1] when there is no data (min > max).
std::pair<double, double> fit_range(double min, double max,
                                    const std::optional<std::pair<double, double>>& fixed,
                                    double margin) {
  if (fixed) return *fixed;
  if (min > max) return {0.0, 1.0};
  const double span = max - min;
  if (span <= 1e-9 * std::max(std::abs(min), std::abs(max))) {
    const double pad = min == 0 ? 1.0 : 0.1 * std::abs(min);
    return {min - pad, max + pad};
  }
  return {min - margin * span, max + margin * span};
}

void check_limits(const char* what, double low, double high) {
  check(std::isfinite(low) && std::isfinite(high) && low < high,
        "{}: limits must be finite with low < high, got [{}, {}]", what, low, high);
}

// Fraction (0..1) of the way from `low` to `high`.
double fraction(double value, std::pair<double, double> range) {
  return (value - range.first) / (range.second - range.first);
}

}  // namespace

// ---------------------------------------------------------------- colours

std::string Color::hex() const { return fmt::format("#{:02x}{:02x}{:02x}", red, green, blue); }

Color palette_color(std::size_t index) {
  // Okabe & Ito (2008), "Color Universal Design", with blue and vermillion
  // first so that two-series charts get the clearest pair.
  static const Color kPalette[] = {
      {0x00, 0x72, 0xb2},  // blue
      {0xd5, 0x5e, 0x00},  // vermillion
      {0x00, 0x9e, 0x73},  // bluish green
      {0xcc, 0x79, 0xa7},  // reddish purple
      {0xe6, 0x9f, 0x00},  // orange
      {0x56, 0xb4, 0xe9},  // sky blue
      {0x33, 0x33, 0x33},  // near black (Okabe–Ito's black, softened)
      {0xf0, 0xe4, 0x42},  // yellow
  };
  return kPalette[index % std::size(kPalette)];
}

Colormap::Colormap(std::vector<Color> anchors) : anchors_(std::move(anchors)) {
  check(anchors_.size() >= 2, "Colormap: needs at least 2 anchor colours, got {}", anchors_.size());
}

Colormap Colormap::viridis() {
  return Colormap({{0x44, 0x01, 0x54},
                   {0x47, 0x2d, 0x7b},
                   {0x3b, 0x52, 0x8b},
                   {0x2c, 0x72, 0x8e},
                   {0x21, 0x90, 0x8c},
                   {0x27, 0xad, 0x81},
                   {0x5d, 0xc8, 0x63},
                   {0xaa, 0xdc, 0x32},
                   {0xfd, 0xe7, 0x25}});
}

Colormap Colormap::reds() {
  return Colormap({{0xff, 0xf5, 0xf0},
                   {0xfe, 0xe0, 0xd2},
                   {0xfc, 0xbb, 0xa1},
                   {0xfc, 0x92, 0x72},
                   {0xfb, 0x6a, 0x4a},
                   {0xef, 0x3b, 0x2c},
                   {0xcb, 0x18, 0x1d},
                   {0xa5, 0x0f, 0x15},
                   {0x67, 0x00, 0x0d}});
}

Color Colormap::at(double t) const {
  if (!(t > 0)) t = 0;  // also catches NaN
  t = std::min(t, 1.0);
  // t lies in segment [i, i+1] of the anchors at position `local` within it.
  const double scaled = t * static_cast<double>(anchors_.size() - 1);
  const std::size_t i = std::min(static_cast<std::size_t>(scaled), anchors_.size() - 2);
  const double local = scaled - static_cast<double>(i);
  const auto mix = [local](std::uint8_t a, std::uint8_t b) {
    return static_cast<std::uint8_t>(std::lround(a + local * (b - a)));
  };
  const Color& a = anchors_[i];
  const Color& b = anchors_[i + 1];
  return {mix(a.red, b.red), mix(a.green, b.green), mix(a.blue, b.blue)};
}

// ---------------------------------------------------------------- helpers

std::string xml_escape(std::string_view text) {
  std::string escaped;
  escaped.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&':
        escaped += "&amp;";
        break;
      case '<':
        escaped += "&lt;";
        break;
      case '>':
        escaped += "&gt;";
        break;
      case '"':
        escaped += "&quot;";
        break;
      case '\'':
        escaped += "&apos;";
        break;
      default:
        // XML 1.0 allows no control characters other than tab, LF and CR.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r') break;
        escaped += c;
    }
  }
  return escaped;
}

double nice_step(double low, double high, int target_count) {
  check(std::isfinite(low) && std::isfinite(high) && low < high && target_count >= 1,
        "nice_step: needs finite low < high and target_count >= 1, got [{}, {}] and {}", low, high,
        target_count);
  // The raw step, rounded up to 1, 2, 5 or 10 times its power of ten.
  const double raw = (high - low) / target_count;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  const double mantissa = raw / power;
  const double nice = mantissa <= 1 ? 1 : mantissa <= 2 ? 2 : mantissa <= 5 ? 5 : 10;
  return nice * power;
}

std::vector<double> nice_ticks(double low, double high, int target_count) {
  if (!std::isfinite(low) || !std::isfinite(high) || low > high) return {};
  if (low == high) return {low};
  const double step = nice_step(low, high, std::max(target_count, 1));
  if (!std::isfinite(step) || step <= 0) return {};
  // Ticks are k · step for whole k, so 0.1 + 0.1 + 0.1 rounding cannot pile up.
  const double first = std::ceil(low / step - 1e-9);
  const double last = std::floor(high / step + 1e-9);
  std::vector<double> ticks;
  for (double k = first; k <= last; ++k) {
    const double tick = k * step;
    ticks.push_back(std::abs(tick) < 1e-9 * step ? 0.0 : tick);
  }
  return ticks;
}

std::string format_tick(double value, double step) {
  step = std::abs(step);
  if (std::abs(value) < 1e-9 * step) value = 0;
  if (step >= 1e5 || (step > 0 && step < 1e-4)) {
    // Exponent form with the mantissa digits the step needs: 1.5e6, 2.5e-6.
    if (value == 0) return "0";
    const int exponent = static_cast<int>(std::floor(std::log10(std::abs(value))));
    const int step_exponent = static_cast<int>(std::floor(std::log10(step) + 1e-9));
    const int digits = std::clamp(exponent - step_exponent, 0, 6);
    const std::string text = fmt::format("{:.{}e}", value, digits);  // "1.500000e+06"
    const std::size_t e = text.find('e');
    std::string mantissa = text.substr(0, e);
    if (mantissa.find('.') != std::string::npos) {
      while (mantissa.back() == '0') mantissa.pop_back();
      if (mantissa.back() == '.') mantissa.pop_back();
    }
    return fmt::format("{}e{}", mantissa, std::stoi(text.substr(e + 1)));
  }
  const int decimals =
      step > 0 ? std::max(0, -static_cast<int>(std::floor(std::log10(step) + 1e-9))) : 2;
  std::string text = fmt::format("{:.{}f}", value, decimals);
  if (text[0] == '-' && text.find_first_not_of("-0.") == std::string::npos) text.erase(0, 1);
  return text;
}

// ---------------------------------------------------------------- line charts

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
  check_limits("LineChart::x_limits", low, high);
  x_limits_ = {low, high};
  return *this;
}

LineChart& LineChart::y_limits(double low, double high) {
  check_limits("LineChart::y_limits", low, high);
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

std::string LineChart::to_svg() const {
  // Data extent over the finite points only.
  constexpr double kInf = std::numeric_limits<double>::infinity();
  double x_min = kInf, x_max = -kInf, y_min = kInf, y_max = -kInf;
  for (const Series& series : series_) {
    for (std::size_t i = 0; i < series.x.size(); ++i) {
      if (!std::isfinite(series.x[i]) || !std::isfinite(series.y[i])) continue;
      x_min = std::min(x_min, series.x[i]);
      x_max = std::max(x_max, series.x[i]);
      y_min = std::min(y_min, series.y[i]);
      y_max = std::max(y_max, series.y[i]);
    }
  }
  const auto x_range = fit_range(x_min, x_max, x_limits_, 0.05);
  const auto y_range = fit_range(y_min, y_max, y_limits_, 0.05);

  // Layout: margins leave room for the title, tick labels and axis labels.
  const double top = title_.empty() ? 16 : 44;
  const double bottom = 34 + (x_label_.empty() ? 0 : 22);
  const double plot_height = std::max(10.0, height_ - top - bottom);
  const std::vector<double> y_ticks =
      nice_ticks(y_range.first, y_range.second, std::max(2, static_cast<int>(plot_height / 45)));
  const double y_step = y_ticks.size() > 1 ? y_ticks[1] - y_ticks[0] : 1.0;
  std::vector<std::string> y_tick_labels;
  for (const double tick : y_ticks) y_tick_labels.push_back(format_tick(tick, y_step));
  const double left =
      12 + (y_label_.empty() ? 0 : 22) + widest(y_tick_labels, kTickFont) + kTickLength + 4;
  const double right = 24;
  const double plot_width = std::max(10.0, width_ - left - right);
  const std::vector<double> x_ticks =
      nice_ticks(x_range.first, x_range.second, std::max(2, static_cast<int>(plot_width / 80)));
  const double x_step = x_ticks.size() > 1 ? x_ticks[1] - x_ticks[0] : 1.0;
  const double plot_bottom = top + plot_height;
  const double plot_right = left + plot_width;

  const auto to_x = [&](double x) { return left + fraction(x, x_range) * plot_width; };
  const auto to_y = [&](double y) { return plot_bottom - fraction(y, y_range) * plot_height; };

  Svg svg(width_, height_);
  if (!title_.empty()) {
    svg.text(left + plot_width / 2, 28, title_, kTitleFont, "middle", 0,
             "class=\"title\" font-weight=\"bold\"");
  }

  // Grid, then the frame over it, then ticks and their labels.
  svg.raw("<g class=\"grid\">\n");
  for (const double tick : x_ticks) svg.line(to_x(tick), top, to_x(tick), plot_bottom, kGridColor);
  for (const double tick : y_ticks) svg.line(left, to_y(tick), plot_right, to_y(tick), kGridColor);
  svg.raw("</g>\n");
  svg.rect(left, top, plot_width, plot_height,
           fmt::format("class=\"frame\" fill=\"none\" stroke=\"{}\"", kFrameColor));

  svg.raw("<g class=\"x-axis\">\n");
  for (const double tick : x_ticks) {
    svg.line(to_x(tick), plot_bottom, to_x(tick), plot_bottom + kTickLength, kFrameColor);
    svg.text(to_x(tick), plot_bottom + kTickLength + 13, format_tick(tick, x_step), kTickFont);
  }
  if (!x_label_.empty()) {
    svg.text(left + plot_width / 2, plot_bottom + 40, x_label_, kLabelFont, "middle", 0,
             "class=\"axis-label\"");
  }
  svg.raw("</g>\n<g class=\"y-axis\">\n");
  for (std::size_t i = 0; i < y_ticks.size(); ++i) {
    const double y = to_y(y_ticks[i]);
    svg.line(left - kTickLength, y, left, y, kFrameColor);
    svg.text(left - kTickLength - 3, y + 0.35 * kTickFont, y_tick_labels[i], kTickFont, "end");
  }
  if (!y_label_.empty()) {
    svg.text(18, top + plot_height / 2, y_label_, kLabelFont, "middle", -90,
             "class=\"axis-label\"");
  }
  svg.raw("</g>\n");

  // Series, clipped to the plot area (fixed limits may cut points off).
  svg.raw("<defs><clipPath id=\"plot-area\">");
  svg.rect(left, top, plot_width, plot_height, "");
  svg.raw("</clipPath></defs>\n<g class=\"plot-area\" clip-path=\"url(#plot-area)\">\n");
  for (std::size_t s = 0; s < series_.size(); ++s) {
    const Series& series = series_[s];
    const std::string color = series.style.color.value_or(palette_color(s)).hex();
    const SeriesStyle& style = series.style;
    svg.raw(fmt::format("<g class=\"series\" data-name=\"{}\" data-kind=\"{}\">\n",
                        xml_escape(series.name),
                        series.kind == SeriesKind::line ? "line" : "scatter"));
    if (series.kind == SeriesKind::scatter) {
      const std::string fill = fmt::format("fill=\"{}\" fill-opacity=\"{}\"", color, style.alpha);
      for (std::size_t i = 0; i < series.x.size(); ++i) {
        if (!std::isfinite(series.x[i]) || !std::isfinite(series.y[i])) continue;
        svg.circle(to_x(series.x[i]), to_y(series.y[i]), style.marker_radius, fill);
      }
    } else {
      // One polyline per run of finite points; a lone point becomes a dot.
      const std::string stroke = fmt::format(
          "fill=\"none\" stroke=\"{}\" stroke-opacity=\"{}\" stroke-width=\"{}\" "
          "stroke-linejoin=\"round\" stroke-linecap=\"round\"{}",
          color, style.alpha, px(style.line_width),
          style.dashed ? " stroke-dasharray=\"7 4\"" : "");
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
      for (std::size_t i = 0; i < series.x.size(); ++i) {
        if (!std::isfinite(series.x[i]) || !std::isfinite(series.y[i])) {
          flush();
          continue;
        }
        last_x = to_x(series.x[i]);
        last_y = to_y(series.y[i]);
        if (run > 0) points += ' ';
        points += px(last_x) + ',' + px(last_y);
        ++run;
      }
      flush();
    }
    svg.raw("</g>\n");
  }
  svg.raw("</g>\n");

  // Legend: one row per named series, boxed in a corner of the plot area.
  std::vector<std::size_t> named;
  for (std::size_t s = 0; s < series_.size(); ++s) {
    if (!series_[s].name.empty()) named.push_back(s);
  }
  if (legend_ != LegendPosition::hidden && !named.empty()) {
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
    const double box_x = on_right ? plot_right - kInset - box_width : left + kInset;
    const double box_y = on_top ? top + kInset : plot_bottom - kInset - box_height;
    svg.raw("<g class=\"legend\">\n");
    svg.rect(box_x, box_y, box_width, box_height,
             "fill=\"#ffffff\" fill-opacity=\"0.85\" stroke=\"#cccccc\" rx=\"3\"");
    for (std::size_t row = 0; row < named.size(); ++row) {
      const Series& series = series_[named[row]];
      const std::string color = series.style.color.value_or(palette_color(named[row])).hex();
      const double y = box_y + kPadding + kRow * static_cast<double>(row) + 5;
      const double swatch_x = box_x + kPadding;
      if (series.kind == SeriesKind::scatter) {
        svg.circle(swatch_x + kSwatch / 2, y, series.style.marker_radius + 0.5,
                   fmt::format("fill=\"{}\" fill-opacity=\"{}\"", color,
                               std::max(series.style.alpha, 0.5)));
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
  return std::move(svg).finish();
}

void LineChart::save(const std::filesystem::path& path) const {
  write_file_atomically(path, to_svg());
}

// ---------------------------------------------------------------- heatmaps

namespace {

// A tick on a heatmap axis. `position` is in cells: 0.5 is the centre of the
// first cell, so the pixel is grid_start + position · cell.
struct CellTick {
  double position;
  std::string label;
};

// Sparse ticks for an axis of `count` cells that stand for `values` (or for
// their indices 0..count−1 when `values` is empty), about one per 60 pixels.
std::vector<CellTick> numeric_cell_ticks(const std::vector<double>& values, std::size_t count,
                                         double pixel_length) {
  const int target = std::max(2, static_cast<int>(pixel_length / 60));
  std::vector<CellTick> ticks;
  if (values.empty()) {
    if (count == 1) return {{0.5, "0"}};
    const double last = static_cast<double>(count - 1);
    const double step = std::max(1.0, nice_step(0, last, target));
    for (double index = 0; index <= last; index += step) {
      ticks.push_back({index + 0.5, format_tick(index, step)});
    }
    return ticks;
  }
  if (count == 1) {
    return {{0.5, format_tick(values[0], values[0] == 0 ? 1.0 : std::abs(values[0]) / 10)}};
  }
  const double low = std::min(values.front(), values.back());
  const double high = std::max(values.front(), values.back());
  const std::vector<double> tick_values = nice_ticks(low, high, target);
  const double step = tick_values.size() > 1 ? tick_values[1] - tick_values[0] : 1.0;
  for (const double value : tick_values) {
    // Find the pair of neighbouring cells whose values bracket `value` and
    // interpolate between their centres.
    for (std::size_t i = 0; i + 1 < count; ++i) {
      const double a = values[i], b = values[i + 1];
      if (value < std::min(a, b) || value > std::max(a, b)) continue;
      const double t = a == b ? 0.0 : (value - a) / (b - a);
      ticks.push_back({static_cast<double>(i) + t + 0.5, format_tick(value, step)});
      break;
    }
  }
  return ticks;
}

void check_axis_values(const char* what, const std::vector<double>& values, std::size_t count) {
  check(values.size() == count, "Heatmap::{}: got {} values for {} cells", what, values.size(),
        count);
  bool increasing = true, decreasing = true;
  for (std::size_t i = 0; i < values.size(); ++i) {
    check(std::isfinite(values[i]), "Heatmap::{}: value {} is {}", what, i, values[i]);
    if (i > 0) {
      increasing = increasing && values[i] >= values[i - 1];
      decreasing = decreasing && values[i] <= values[i - 1];
    }
  }
  check(increasing || decreasing,
        "Heatmap::{}: values must be sorted (increasing or decreasing) so ticks can be placed; "
        "sort the rows/columns first",
        what);
}

}  // namespace

Heatmap::Heatmap(std::size_t rows, std::size_t cols, std::vector<double> values)
    : rows_(rows), cols_(cols), values_(std::move(values)) {
  check(rows_ > 0 && cols_ > 0, "Heatmap: needs at least one row and one column, got {} x {}",
        rows_, cols_);
  check(values_.size() == rows_ * cols_, "Heatmap: {} x {} needs {} values, got {}", rows_, cols_,
        rows_ * cols_, values_.size());
}

Heatmap::Heatmap(const std::vector<std::vector<double>>& matrix)
    : rows_(matrix.size()), cols_(matrix.empty() ? 0 : matrix[0].size()) {
  check(rows_ > 0 && cols_ > 0, "Heatmap: needs at least one row and one column, got {} x {}",
        rows_, cols_);
  values_.reserve(rows_ * cols_);
  for (std::size_t r = 0; r < rows_; ++r) {
    check(matrix[r].size() == cols_, "Heatmap: row {} has {} values but row 0 has {}", r,
          matrix[r].size(), cols_);
    values_.insert(values_.end(), matrix[r].begin(), matrix[r].end());
  }
}

Heatmap& Heatmap::title(std::string text) {
  title_ = std::move(text);
  return *this;
}

Heatmap& Heatmap::x_label(std::string text) {
  x_label_ = std::move(text);
  return *this;
}

Heatmap& Heatmap::y_label(std::string text) {
  y_label_ = std::move(text);
  return *this;
}

Heatmap& Heatmap::row_labels(std::vector<std::string> labels) {
  check(labels.size() == rows_, "Heatmap::row_labels: got {} labels for {} rows", labels.size(),
        rows_);
  row_labels_ = std::move(labels);
  row_values_.clear();
  return *this;
}

Heatmap& Heatmap::column_labels(std::vector<std::string> labels) {
  check(labels.size() == cols_, "Heatmap::column_labels: got {} labels for {} columns",
        labels.size(), cols_);
  column_labels_ = std::move(labels);
  column_values_.clear();
  return *this;
}

Heatmap& Heatmap::row_values(std::vector<double> values) {
  check_axis_values("row_values", values, rows_);
  row_values_ = std::move(values);
  row_labels_.clear();
  return *this;
}

Heatmap& Heatmap::column_values(std::vector<double> values) {
  check_axis_values("column_values", values, cols_);
  column_values_ = std::move(values);
  column_labels_.clear();
  return *this;
}

Heatmap& Heatmap::value_limits(double low, double high) {
  check_limits("Heatmap::value_limits", low, high);
  value_limits_ = {low, high};
  return *this;
}

Heatmap& Heatmap::colormap(Colormap map) {
  colormap_ = std::move(map);
  return *this;
}

Heatmap& Heatmap::colorbar_label(std::string text) {
  colorbar_label_ = std::move(text);
  return *this;
}

Heatmap& Heatmap::size(int width, int height) {
  check(width >= 100 && height >= 100, "Heatmap::size: {} x {} is too small (at least 100 x 100)",
        width, height);
  width_ = width;
  height_ = height;
  return *this;
}

std::string Heatmap::to_svg() const {
  // Colour range over the finite entries.
  constexpr double kInf = std::numeric_limits<double>::infinity();
  double v_min = kInf, v_max = -kInf;
  for (const double value : values_) {
    if (!std::isfinite(value)) continue;
    v_min = std::min(v_min, value);
    v_max = std::max(v_max, value);
  }
  const auto value_range = fit_range(v_min, v_max, value_limits_, 0.0);

  const double rows = static_cast<double>(rows_);
  const double cols = static_cast<double>(cols_);
  const double top = title_.empty() ? 16 : 44;

  // Colour-bar ticks do not depend on the layout except through their count,
  // so their labels' width is estimated from a typical count first.
  const std::vector<double> bar_ticks_guess = nice_ticks(value_range.first, value_range.second, 5);
  const double bar_step_guess =
      bar_ticks_guess.size() > 1 ? bar_ticks_guess[1] - bar_ticks_guess[0] : 1.0;
  std::vector<std::string> bar_labels_guess;
  for (const double tick : bar_ticks_guess) {
    bar_labels_guess.push_back(format_tick(tick, bar_step_guess));
  }
  constexpr double kBarGap = 18, kBarWidth = 14;
  const double right = kBarGap + kBarWidth + kTickLength + 3 + widest(bar_labels_guess, kTickFont) +
                       (colorbar_label_.empty() ? 0 : 24) + 12;

  // The layout depends on the cell size (label font, ticks, rotation) and the
  // cell size on the layout; three rounds settle it.
  double cell = 20, label_font = kTickFont, left = 0, bottom = 0;
  double row_label_width = 0, column_extent = 0;
  bool rotate_columns = false;
  std::vector<CellTick> row_ticks, column_ticks;
  for (int round = 0; round < 3; ++round) {
    label_font = std::clamp(cell * 0.8, 7.0, kTickFont);
    if (!row_labels_.empty()) {
      row_ticks.clear();
      for (std::size_t r = 0; r < rows_; ++r) row_ticks.push_back({r + 0.5, row_labels_[r]});
    } else {
      row_ticks = numeric_cell_ticks(row_values_, rows_, cell * rows);
    }
    if (!column_labels_.empty()) {
      column_ticks.clear();
      for (std::size_t c = 0; c < cols_; ++c) column_ticks.push_back({c + 0.5, column_labels_[c]});
    } else {
      column_ticks = numeric_cell_ticks(column_values_, cols_, cell * cols);
    }
    const double font = row_labels_.empty() ? kTickFont : label_font;
    row_label_width = 0;
    double column_label_width = 0;
    for (const CellTick& tick : row_ticks) {
      row_label_width = std::max(row_label_width, text_width(tick.label, font));
    }
    const double column_font = column_labels_.empty() ? kTickFont : label_font;
    for (const CellTick& tick : column_ticks) {
      column_label_width = std::max(column_label_width, text_width(tick.label, column_font));
    }
    // Word labels turn −45° when the widest does not fit in a cell.
    rotate_columns = !column_labels_.empty() && column_label_width > 0.95 * cell;
    left = 12 + (y_label_.empty() ? 0 : 22) + row_label_width + kTickLength + 4;
    column_extent = rotate_columns ? 0.71 * (column_label_width + column_font) : column_font;
    bottom = kTickLength + 6 + column_extent + (x_label_.empty() ? 0 : 24) + 10;
    if (rotate_columns && !column_ticks.empty()) {
      // The first rotated label reaches left of the grid.
      left = std::max(left, 0.71 * text_width(column_ticks[0].label, column_font) + 8 - cell / 2);
    }
    const double available_width = std::max(10.0, width_ - left - right);
    const double available_height = std::max(10.0, height_ - top - bottom);
    cell = std::max(1.0, std::min(available_width / cols, available_height / rows));
  }

  // Centre the grid in the space left for it.
  const double grid_width = cell * cols, grid_height = cell * rows;
  const double grid_left = left + std::max(0.0, (width_ - left - right - grid_width) / 2);
  const double grid_top = top + std::max(0.0, (height_ - top - bottom - grid_height) / 2);
  const double grid_right = grid_left + grid_width, grid_bottom = grid_top + grid_height;

  Svg svg(width_, height_);
  if (!title_.empty()) {
    svg.text(grid_left + grid_width / 2, 28, title_, kTitleFont, "middle", 0,
             "class=\"title\" font-weight=\"bold\"");
  }

  // Cells. Each overlaps its right and lower neighbour by half a pixel so no
  // hairline of background shows between them.
  svg.raw("<g class=\"heatmap\" shape-rendering=\"crispEdges\">\n");
  for (std::size_t r = 0; r < rows_; ++r) {
    for (std::size_t c = 0; c < cols_; ++c) {
      const double value = values_[r * cols_ + c];
      const std::string fill = std::isfinite(value)
                                   ? colormap_.at(fraction(value, value_range)).hex()
                                   : std::string(kMissingColor);
      const double overlap_x = c + 1 < cols_ ? 0.5 : 0.0;
      const double overlap_y = r + 1 < rows_ ? 0.5 : 0.0;
      svg.rect(grid_left + c * cell, grid_top + r * cell, cell + overlap_x, cell + overlap_y,
               fmt::format("fill=\"{}\"", fill));
    }
  }
  svg.raw("</g>\n");
  svg.rect(grid_left, grid_top, grid_width, grid_height,
           fmt::format("class=\"frame\" fill=\"none\" stroke=\"{}\"", kFrameColor));

  // Row ticks on the left, column ticks below.
  const double row_font = row_labels_.empty() ? kTickFont : label_font;
  svg.raw(row_labels_.empty() ? "<g class=\"y-axis\">\n" : "<g class=\"y-axis row-labels\">\n");
  for (const CellTick& tick : row_ticks) {
    const double y = grid_top + tick.position * cell;
    svg.line(grid_left - kTickLength, y, grid_left, y, kFrameColor);
    svg.text(grid_left - kTickLength - 3, y + 0.35 * row_font, tick.label, row_font, "end");
  }
  if (!y_label_.empty()) {
    svg.text(grid_left - kTickLength - 3 - row_label_width - 10, grid_top + grid_height / 2,
             y_label_, kLabelFont, "middle", -90, "class=\"axis-label\"");
  }
  const double column_font = column_labels_.empty() ? kTickFont : label_font;
  svg.raw(column_labels_.empty() ? "</g>\n<g class=\"x-axis\">\n"
                                 : "</g>\n<g class=\"x-axis column-labels\">\n");
  for (const CellTick& tick : column_ticks) {
    const double x = grid_left + tick.position * cell;
    svg.line(x, grid_bottom, x, grid_bottom + kTickLength, kFrameColor);
    if (rotate_columns) {
      svg.text(x + 0.3 * column_font, grid_bottom + kTickLength + 5, tick.label, column_font, "end",
               -45);
    } else {
      svg.text(x, grid_bottom + kTickLength + 3 + column_font, tick.label, column_font);
    }
  }
  if (!x_label_.empty()) {
    svg.text(grid_left + grid_width / 2, grid_bottom + kTickLength + 6 + column_extent + 18,
             x_label_, kLabelFont, "middle", 0, "class=\"axis-label\"");
  }
  svg.raw("</g>\n");

  // Colour bar: a vertical gradient through the colour map's anchors (the map
  // is linear between them, exactly like SVG gradient stops), low at the
  // bottom, at least 160 px tall when the grid is flatter than that.
  const double bar_height = std::max(grid_height, std::min(height_ - top - bottom, 160.0));
  const double bar_top = std::max(top, grid_top + grid_height / 2 - bar_height / 2);
  const double bar_bottom = bar_top + bar_height;
  const double bar_left = grid_right + kBarGap;
  svg.raw("<g class=\"colorbar\">\n<defs><linearGradient id=\"colorbar-gradient\" ");
  svg.raw("x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">\n");
  const auto& anchors = colormap_.anchors();
  for (std::size_t i = 0; i < anchors.size(); ++i) {
    svg.raw(fmt::format("<stop offset=\"{}\" stop-color=\"{}\"/>\n",
                        px(static_cast<double>(i) / static_cast<double>(anchors.size() - 1)),
                        anchors[i].hex()));
  }
  svg.raw("</linearGradient></defs>\n");
  svg.rect(bar_left, bar_top, kBarWidth, bar_height,
           fmt::format("fill=\"url(#colorbar-gradient)\" stroke=\"{}\"", kFrameColor));
  const std::vector<double> bar_ticks = nice_ticks(value_range.first, value_range.second,
                                                   std::max(2, static_cast<int>(bar_height / 40)));
  const double bar_step = bar_ticks.size() > 1 ? bar_ticks[1] - bar_ticks[0] : 1.0;
  double bar_label_width = 0;
  for (const double tick : bar_ticks) {
    const double y = bar_bottom - fraction(tick, value_range) * bar_height;
    const std::string label = format_tick(tick, bar_step);
    bar_label_width = std::max(bar_label_width, text_width(label, kTickFont));
    svg.line(bar_left + kBarWidth, y, bar_left + kBarWidth + kTickLength, y, kFrameColor);
    svg.text(bar_left + kBarWidth + kTickLength + 3, y + 0.35 * kTickFont, label, kTickFont,
             "start");
  }
  if (!colorbar_label_.empty()) {
    const double x = bar_left + kBarWidth + kTickLength + 3 + bar_label_width + 16;
    svg.text(x, bar_top + bar_height / 2, colorbar_label_, kLabelFont, "middle", 90,
             "class=\"axis-label\"");
  }
  svg.raw("</g>\n");
  return std::move(svg).finish();
}

void Heatmap::save(const std::filesystem::path& path) const {
  write_file_atomically(path, to_svg());
}

}  // namespace attograd::plot
