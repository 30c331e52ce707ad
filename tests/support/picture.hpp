// tests/support/picture.hpp — an SVG written by plot/svg_plot,
// parsed (tests/support/svg.hpp) and summed up as the translate CLI tests
// check it: whether it is well-formed XML, its heatmap cells, polyline
// points, colour bar and texts.
#pragma once

#include <cstddef>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/program.hpp"
#include "tests/support/svg.hpp"

namespace attograd::testing {

// A picture parsed with expat: well-formed, its heatmap cells, polyline
// points and texts.
struct Picture {
  bool well_formed = false;
  std::size_t heatmap_cells = 0;
  std::size_t polyline_points = 0;
  bool has_colorbar = false;
  std::vector<std::string> texts;
  bool has_text(const std::string& wanted) const {
    for (const std::string& text : texts) {
      if (text == wanted) return true;
    }
    return false;
  }
};

inline Picture parse_picture(const std::filesystem::path& path) {
  const ParsedSvg svg = parse_svg(read_file(path));
  Picture picture;
  picture.well_formed = svg.error.empty();
  for (const Element& element : svg.elements) {
    // A cell is a rect directly inside a <g> whose class starts with "heatmap".
    const bool in_heatmap = !element.groups.empty() && element.groups.back().find("heatmap") == 0;
    if (element.tag == "g" && element.attribute("class") == "colorbar") picture.has_colorbar = true;
    if (element.tag == "rect" && in_heatmap) ++picture.heatmap_cells;
    if (element.tag == "polyline") {
      std::istringstream points(element.attribute("points"));
      for (std::string point; points >> point;) ++picture.polyline_points;
    }
    if (element.tag == "text" || element.tag == "tspan") picture.texts.push_back(element.text);
  }
  return picture;
}

}  // namespace attograd::testing
