// plot/svg_document.hpp — the SVG text that both chart kinds build,
// and the small layout arithmetic they share.
//
// Only xml_escape is part of the plotting interface (svg_plot.hpp). The rest
// lives in `plot::detail`: the line chart (svg_line_plot.cpp) and the heatmap
// (svg_heatmap.cpp) use it to write their elements; callers never need it.
//
// Coordinates: SVG puts (0, 0) at the top-left corner with y growing down, so
// a data value y maps to plot_bottom − (y − y_low) / (y_high − y_low) · height.
// Text widths are estimated (about 0.55 em per character of a sans-serif
// font); that is only used to leave room for labels, so rough is fine.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace attograd::plot {

// Text made safe for XML content and attribute values: & < > " ' become
// entities, and control characters XML cannot carry (other than tab, newline
// and carriage return) are dropped.
std::string xml_escape(std::string_view text);

namespace detail {

// Font sizes and colours every chart uses.
inline constexpr double kTitleFont = 16;
inline constexpr double kLabelFont = 13;
inline constexpr double kTickFont = 11;
inline constexpr double kTickLength = 5;
inline constexpr const char* kTextColor = "#222222";
inline constexpr const char* kFrameColor = "#555555";

// A pixel coordinate with at most two decimals and no trailing zeros.
// Clamped so that a point far outside fixed limits still gives a number
// every renderer accepts (it is clipped anyway).
std::string px(double value);

// Estimated rendered width of UTF-8 `text`: code points × 0.55 em.
double text_width(std::string_view text, double font_size);

// The largest text_width of `texts`.
double widest(const std::vector<std::string>& texts, double font_size);

// The SVG being built. Each call appends one element.
class Svg {
 public:
  // Opens the <svg> element and paints a white background.
  Svg(int width, int height);

  // Text whose baseline starts (anchor "start"), is centred on ("middle") or
  // ends ("end") at x. `rotate` turns it by that many degrees about (x, y).
  void text(double x, double y, std::string_view content, double font_size,
            std::string_view anchor = "middle", double rotate = 0,
            std::string_view extra_attributes = "");
  void line(double x1, double y1, double x2, double y2, std::string_view stroke,
            double stroke_width = 1);
  void rect(double x, double y, double width, double height, std::string_view attributes);
  void circle(double x, double y, double radius, std::string_view attributes);
  // Raw markup: group tags, definitions.
  void raw(std::string_view markup) { out_ += markup; }

  // Closes the <svg> element and hands over the text.
  std::string finish() &&;

 private:
  std::string out_;
};

// The axis range for data spanning [min, max]: fixed limits if given;
// otherwise the data plus a `margin` share of its span on each side, widened
// around a constant value, and [0, 1] when there is no data (min > max).
std::pair<double, double> fit_range(double min, double max,
                                    const std::optional<std::pair<double, double>>& fixed,
                                    double margin);

// Throws unless low < high are both finite; `what` names the caller.
void check_limits(const char* what, double low, double high);

// Fraction (0..1) of the way from range.first to range.second.
double fraction(double value, std::pair<double, double> range);

}  // namespace detail
}  // namespace attograd::plot
