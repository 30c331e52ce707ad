// plot/svg_heatmap.cpp — the drawing behind Heatmap
// (svg_heatmap.hpp). to_svg() sizes the cells to the picture, then draws the
// cells, the axes and the colour bar.
#include "plot/svg_heatmap.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "plot/svg_document.hpp"
#include "tensor/atomic_file.hpp"
#include "tensor/error.hpp"

namespace attograd::plot {

namespace detail {

// A tick on a heatmap axis. `position` is in cells: 0.5 is the centre of the
// first cell, so the pixel is grid_start + position · cell.
struct CellTick {
  double position;
  std::string label;
};

// The value range of a Heatmap's colours, its cell size in pixels and where
// its grid, tick labels and colour bar go.
struct HeatmapGrid {
  std::pair<double, double> value_range;
  double top = 0;  // margins around the grid, in pixels
  double bottom = 0;
  double cell = 0;  // side of a (square) cell
  double grid_left = 0;
  double grid_top = 0;
  double grid_width = 0;
  double grid_height = 0;
  double grid_right = 0;
  double grid_bottom = 0;
  std::vector<CellTick> row_ticks;
  std::vector<CellTick> column_ticks;
  double row_font = 0;  // font sizes of the tick labels
  double column_font = 0;
  double row_label_width = 0;   // widest row tick label
  double column_extent = 0;     // height the column tick labels take below the grid
  bool rotate_columns = false;  // column labels turned −45° because they are wider than a cell
};

}  // namespace detail

namespace {

using detail::CellTick;
using detail::fraction;
using detail::HeatmapGrid;
using detail::kFrameColor;
using detail::kLabelFont;
using detail::kTickFont;
using detail::kTickLength;
using detail::kTitleFont;
using detail::Svg;
using detail::text_width;

constexpr const char* kMissingColor = "#d0d0d0";
constexpr double kBarGap = 18;    // between the grid and the colour bar
constexpr double kBarWidth = 14;  // of the colour bar

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

// The ticks of one axis: a word at every cell's centre when there are word
// labels, else sparse numeric ticks.
std::vector<CellTick> axis_ticks(const std::vector<std::string>& labels,
                                 const std::vector<double>& values, std::size_t count,
                                 double pixel_length) {
  if (labels.empty()) return numeric_cell_ticks(values, count, pixel_length);
  std::vector<CellTick> ticks;
  for (std::size_t i = 0; i < count; ++i) ticks.push_back({i + 0.5, labels[i]});
  return ticks;
}

double widest_label(const std::vector<CellTick>& ticks, double font_size) {
  double width = 0;
  for (const CellTick& tick : ticks) width = std::max(width, text_width(tick.label, font_size));
  return width;
}

// The margin right of the grid: the colour bar, its tick labels and its
// label. The ticks depend on the bar's height only through their count, so
// their labels' width is estimated from a typical count.
double colorbar_margin(std::pair<double, double> value_range, bool has_label) {
  const std::vector<double> ticks = nice_ticks(value_range.first, value_range.second, 5);
  const double step = ticks.size() > 1 ? ticks[1] - ticks[0] : 1.0;
  std::vector<std::string> labels;
  for (const double tick : ticks) labels.push_back(format_tick(tick, step));
  return kBarGap + kBarWidth + kTickLength + 3 + detail::widest(labels, kTickFont) +
         (has_label ? 24 : 0) + 12;
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

// What row or column `index` stands for in a hover tooltip: its word, its
// value, or its index.
std::string cell_label(const std::vector<std::string>& labels, const std::vector<double>& values,
                       std::size_t index) {
  if (index < labels.size()) return labels[index];
  if (index < values.size()) return fmt::format("{:.3g}", values[index]);
  return std::to_string(index);
}

}  // namespace

// ---------------------------------------------------------------- settings

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
  detail::check_limits("Heatmap::value_limits", low, high);
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

// ---------------------------------------------------------------- drawing

std::string Heatmap::to_svg() const {
  const HeatmapGrid grid = layout();
  Svg svg(width_, height_);
  if (!title_.empty()) {
    svg.text(grid.grid_left + grid.grid_width / 2, 28, title_, kTitleFont, "middle", 0,
             "class=\"title\" font-weight=\"bold\"");
  }
  draw_cells(svg, grid);
  draw_axes(svg, grid);
  draw_colorbar(svg, grid);
  return std::move(svg).finish();
}

void Heatmap::save(const std::filesystem::path& path) const {
  write_file_atomically(path, to_svg());
}

Heatmap& Heatmap::hover_cells(bool on) {
  hover_cells_ = on;
  return *this;
}

HeatmapGrid Heatmap::layout() const {
  HeatmapGrid grid;
  // Colour range over the finite entries.
  constexpr double kInf = std::numeric_limits<double>::infinity();
  double v_min = kInf, v_max = -kInf;
  for (const double value : values_) {
    if (!std::isfinite(value)) continue;
    v_min = std::min(v_min, value);
    v_max = std::max(v_max, value);
  }
  grid.value_range = detail::fit_range(v_min, v_max, value_limits_, 0.0);

  const double rows = static_cast<double>(rows_);
  const double cols = static_cast<double>(cols_);
  const double top = title_.empty() ? 16 : 44;
  const double right = colorbar_margin(grid.value_range, !colorbar_label_.empty());

  // The layout depends on the cell size (label font, ticks, rotation) and the
  // cell size on the layout; three rounds settle it.
  double cell = 20, left = 0, bottom = 0;
  for (int round = 0; round < 3; ++round) {
    const double label_font = std::clamp(cell * 0.8, 7.0, kTickFont);
    grid.row_ticks = axis_ticks(row_labels_, row_values_, rows_, cell * rows);
    grid.column_ticks = axis_ticks(column_labels_, column_values_, cols_, cell * cols);
    grid.row_font = row_labels_.empty() ? kTickFont : label_font;
    grid.column_font = column_labels_.empty() ? kTickFont : label_font;
    grid.row_label_width = widest_label(grid.row_ticks, grid.row_font);
    const double column_label_width = widest_label(grid.column_ticks, grid.column_font);
    // Word labels turn −45° when the widest does not fit in a cell.
    grid.rotate_columns = !column_labels_.empty() && column_label_width > 0.95 * cell;
    left = 12 + (y_label_.empty() ? 0 : 22) + grid.row_label_width + kTickLength + 4;
    grid.column_extent =
        grid.rotate_columns ? 0.71 * (column_label_width + grid.column_font) : grid.column_font;
    bottom = kTickLength + 6 + grid.column_extent + (x_label_.empty() ? 0 : 24) + 10;
    if (grid.rotate_columns && !grid.column_ticks.empty()) {
      // The first rotated label reaches left of the grid.
      left = std::max(
          left, 0.71 * text_width(grid.column_ticks[0].label, grid.column_font) + 8 - cell / 2);
    }
    const double available_width = std::max(10.0, width_ - left - right);
    const double available_height = std::max(10.0, height_ - top - bottom);
    cell = std::max(1.0, std::min(available_width / cols, available_height / rows));
  }

  // Centre the grid in the space left for it.
  grid.top = top;
  grid.bottom = bottom;
  grid.cell = cell;
  grid.grid_width = cell * cols;
  grid.grid_height = cell * rows;
  grid.grid_left = left + std::max(0.0, (width_ - left - right - grid.grid_width) / 2);
  grid.grid_top = top + std::max(0.0, (height_ - top - bottom - grid.grid_height) / 2);
  grid.grid_right = grid.grid_left + grid.grid_width;
  grid.grid_bottom = grid.grid_top + grid.grid_height;
  return grid;
}

// Each cell overlaps its right and lower neighbour by half a pixel so no
// hairline of background shows between them.
void Heatmap::draw_cells(Svg& svg, const HeatmapGrid& grid) const {
  const double cell = grid.cell;
  svg.raw("<g class=\"heatmap\" shape-rendering=\"crispEdges\">\n");
  for (std::size_t r = 0; r < rows_; ++r) {
    for (std::size_t c = 0; c < cols_; ++c) {
      const double value = values_[r * cols_ + c];
      const std::string fill = std::isfinite(value)
                                   ? colormap_.at(fraction(value, grid.value_range)).hex()
                                   : std::string(kMissingColor);
      const double overlap_x = c + 1 < cols_ ? 0.5 : 0.0;
      const double overlap_y = r + 1 < rows_ ? 0.5 : 0.0;
      const double x = grid.grid_left + c * cell, y = grid.grid_top + r * cell;
      if (!hover_cells_) {
        svg.rect(x, y, cell + overlap_x, cell + overlap_y, fmt::format("fill=\"{}\"", fill));
        continue;
      }
      const std::string query = xml_escape(cell_label(row_labels_, row_values_, r));
      const std::string key = xml_escape(cell_label(column_labels_, column_values_, c));
      svg.raw(fmt::format(
          "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" data-q=\"{}\" "
          "data-k=\"{}\" data-w=\"{:.3g}\"/>\n",
          detail::px(x), detail::px(y), detail::px(cell + overlap_x), detail::px(cell + overlap_y),
          fill, query, key, value));
    }
  }
  svg.raw("</g>\n");
  svg.rect(grid.grid_left, grid.grid_top, grid.grid_width, grid.grid_height,
           fmt::format("class=\"frame\" fill=\"none\" stroke=\"{}\"", kFrameColor));
}

// Row ticks on the left, column ticks below.
void Heatmap::draw_axes(Svg& svg, const HeatmapGrid& grid) const {
  const double row_font = grid.row_font, column_font = grid.column_font;
  svg.raw(row_labels_.empty() ? "<g class=\"y-axis\">\n" : "<g class=\"y-axis row-labels\">\n");
  for (const CellTick& tick : grid.row_ticks) {
    const double y = grid.grid_top + tick.position * grid.cell;
    svg.line(grid.grid_left - kTickLength, y, grid.grid_left, y, kFrameColor);
    svg.text(grid.grid_left - kTickLength - 3, y + 0.35 * row_font, tick.label, row_font, "end");
  }
  if (!y_label_.empty()) {
    svg.text(grid.grid_left - kTickLength - 3 - grid.row_label_width - 10,
             grid.grid_top + grid.grid_height / 2, y_label_, kLabelFont, "middle", -90,
             "class=\"axis-label\"");
  }
  svg.raw(column_labels_.empty() ? "</g>\n<g class=\"x-axis\">\n"
                                 : "</g>\n<g class=\"x-axis column-labels\">\n");
  for (const CellTick& tick : grid.column_ticks) {
    const double x = grid.grid_left + tick.position * grid.cell;
    svg.line(x, grid.grid_bottom, x, grid.grid_bottom + kTickLength, kFrameColor);
    if (grid.rotate_columns) {
      svg.text(x + 0.3 * column_font, grid.grid_bottom + kTickLength + 5, tick.label, column_font,
               "end", -45);
    } else {
      svg.text(x, grid.grid_bottom + kTickLength + 3 + column_font, tick.label, column_font);
    }
  }
  if (!x_label_.empty()) {
    svg.text(grid.grid_left + grid.grid_width / 2,
             grid.grid_bottom + kTickLength + 6 + grid.column_extent + 18, x_label_, kLabelFont,
             "middle", 0, "class=\"axis-label\"");
  }
  svg.raw("</g>\n");
}

// A vertical gradient through the colour map's anchors (the map is linear
// between them, exactly like SVG gradient stops), low at the bottom, at least
// 160 px tall when the grid is flatter than that.
void Heatmap::draw_colorbar(Svg& svg, const HeatmapGrid& grid) const {
  const double bar_height =
      std::max(grid.grid_height, std::min(height_ - grid.top - grid.bottom, 160.0));
  const double bar_top = std::max(grid.top, grid.grid_top + grid.grid_height / 2 - bar_height / 2);
  const double bar_bottom = bar_top + bar_height;
  const double bar_left = grid.grid_right + kBarGap;
  svg.raw("<g class=\"colorbar\">\n<defs><linearGradient id=\"colorbar-gradient\" ");
  svg.raw("x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">\n");
  const auto& anchors = colormap_.anchors();
  for (std::size_t i = 0; i < anchors.size(); ++i) {
    svg.raw(
        fmt::format("<stop offset=\"{}\" stop-color=\"{}\"/>\n",
                    detail::px(static_cast<double>(i) / static_cast<double>(anchors.size() - 1)),
                    anchors[i].hex()));
  }
  svg.raw("</linearGradient></defs>\n");
  svg.rect(bar_left, bar_top, kBarWidth, bar_height,
           fmt::format("fill=\"url(#colorbar-gradient)\" stroke=\"{}\"", kFrameColor));
  const std::pair<double, double> range = grid.value_range;
  const std::vector<double> bar_ticks =
      nice_ticks(range.first, range.second, std::max(2, static_cast<int>(bar_height / 40)));
  const double bar_step = bar_ticks.size() > 1 ? bar_ticks[1] - bar_ticks[0] : 1.0;
  double bar_label_width = 0;
  for (const double tick : bar_ticks) {
    const double y = bar_bottom - fraction(tick, range) * bar_height;
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
}

}  // namespace attograd::plot
