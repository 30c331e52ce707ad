// plot/svg_heatmap.hpp — a matrix drawn as coloured cells with a
// colour bar (attention weights). Part of svg_plot.hpp, which has an example.
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
struct HeatmapGrid;  // where a Heatmap's cells, ticks and colour bar go (svg_heatmap.cpp)
}  // namespace detail

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
  // Each cell carries its labels and value for the script of a page that
  // shows them on hover (examples/common/run_report.cpp): data-q (the row's
  // label), data-k (the column's label), data-w (the value, 3 digits). Off
  // by default: it doubles the size of a cell's markup.
  Heatmap& hover_cells(bool on = true);

  std::size_t rows() const { return rows_; }
  std::size_t cols() const { return cols_; }

  std::string to_svg() const;
  void save(const std::filesystem::path& path) const;

 private:
  // The steps of to_svg(): place the grid, then draw onto it in order.
  detail::HeatmapGrid layout() const;
  void draw_cells(detail::Svg& svg, const detail::HeatmapGrid& grid) const;
  void draw_axes(detail::Svg& svg, const detail::HeatmapGrid& grid) const;
  void draw_colorbar(detail::Svg& svg, const detail::HeatmapGrid& grid) const;

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
  bool hover_cells_ = false;
};

}  // namespace attograd::plot
