// plot/svg_scales.cpp — colours, colour maps and tick placement
// (svg_scales.hpp).
#include "plot/svg_scales.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>

#include "tensor/error.hpp"

namespace attograd::plot {

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

// ---------------------------------------------------------------- ticks

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

}  // namespace attograd::plot
