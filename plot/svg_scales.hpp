// plot/svg_scales.hpp — how values become colours and axis ticks:
// the series palette, colour maps for heatmaps, and "nice" tick steps and
// labels. Part of svg_plot.hpp; the charts in svg_line_plot.hpp and
// svg_heatmap.hpp use them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
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

// ---------------------------------------------------------------- ticks

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

}  // namespace attograd::plot
