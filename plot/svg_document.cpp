// plot/svg_document.cpp — the SVG writer and the layout helpers
// of svg_document.hpp.
#include "plot/svg_document.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "tensor/error.hpp"

namespace attograd::plot {

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

namespace detail {

std::string px(double value) {
  if (!std::isfinite(value)) value = 0;
  value = std::clamp(value, -1e6, 1e6);
  std::string text = fmt::format("{:.2f}", value);  // always holds a '.'
  const size_t last = text.find_last_not_of('0');   // "12.50" keeps "12.5"
  text.resize(text[last] == '.' ? last : last + 1);
  if (text == "-0") return std::string(1, '0');
  return text;
}

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

// ---------------------------------------------------------------- Svg

Svg::Svg(int width, int height) {
  out_ += fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" font-family=\"sans-serif\" fill=\"{2}\">\n"
      "<rect class=\"background\" x=\"0\" y=\"0\" width=\"{0}\" height=\"{1}\" "
      "fill=\"#ffffff\"/>\n",
      width, height, kTextColor);
}

void Svg::text(double x, double y, std::string_view content, double font_size,
               std::string_view anchor, double rotate, std::string_view extra_attributes) {
  out_ += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"{}\" text-anchor=\"{}\"", px(x), px(y),
                      px(font_size), anchor);
  if (rotate != 0) out_ += fmt::format(" transform=\"rotate({} {} {})\"", px(rotate), px(x), px(y));
  if (!extra_attributes.empty()) out_ += fmt::format(" {}", extra_attributes);
  out_ += fmt::format(">{}</text>\n", xml_escape(content));
}

void Svg::line(double x1, double y1, double x2, double y2, std::string_view stroke,
               double stroke_width) {
  out_ += fmt::format(
      "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"{}\"/>\n", px(x1),
      px(y1), px(x2), px(y2), stroke, px(stroke_width));
}

void Svg::rect(double x, double y, double width, double height, std::string_view attributes) {
  out_ += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" {}/>\n", px(x), px(y),
                      px(width), px(height), attributes);
}

void Svg::circle(double x, double y, double radius, std::string_view attributes) {
  out_ += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"{}\" {}/>\n", px(x), px(y), px(radius),
                      attributes);
}

std::string Svg::finish() && {
  out_ += "</svg>\n";
  return std::move(out_);
}

// ---------------------------------------------------------------- ranges

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

double fraction(double value, std::pair<double, double> range) {
  return (value - range.first) / (range.second - range.first);
}

}  // namespace detail
}  // namespace attograd::plot
