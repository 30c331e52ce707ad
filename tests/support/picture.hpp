// tests/support/picture.hpp — an SVG written by examples/common/svg_plot,
// parsed with expat into what the CLI tests check: whether it is well-formed
// XML, its heatmap cells, polyline points, colour bar and texts.
#pragma once

#include <expat.h>

#include <cstddef>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/program.hpp"

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
  struct State {
    Picture picture;
    std::vector<std::string> groups;
    bool in_text = false;
  } state;
  const std::string svg = read_file(path);
  XML_Parser parser = XML_ParserCreate("UTF-8");
  XML_SetUserData(parser, &state);
  XML_SetElementHandler(
      parser,
      [](void* data, const XML_Char* name, const XML_Char** attributes) {
        auto& state = *static_cast<State*>(data);
        const std::string tag = name;
        std::string group_class, points;
        for (int i = 0; attributes[i] != nullptr; i += 2) {
          if (std::string(attributes[i]) == "class") group_class = attributes[i + 1];
          if (std::string(attributes[i]) == "points") points = attributes[i + 1];
        }
        const bool in_heatmap = !state.groups.empty() && state.groups.back().find("heatmap") == 0;
        if (tag == "g") {
          state.groups.push_back(group_class);
          if (group_class == "colorbar") state.picture.has_colorbar = true;
        }
        if (tag == "rect" && in_heatmap) ++state.picture.heatmap_cells;
        if (tag == "polyline") {
          std::istringstream stream(points);
          for (std::string point; stream >> point;) ++state.picture.polyline_points;
        }
        if (tag == "text" || tag == "tspan") {
          state.picture.texts.emplace_back();
          state.in_text = true;
        }
      },
      [](void* data, const XML_Char* name) {
        auto& state = *static_cast<State*>(data);
        if (std::string(name) == "g") state.groups.pop_back();
        if (std::string(name) == "text") state.in_text = false;
      });
  XML_SetCharacterDataHandler(parser, [](void* data, const XML_Char* text, int length) {
    auto& state = *static_cast<State*>(data);
    if (state.in_text) state.picture.texts.back().append(text, static_cast<std::size_t>(length));
  });
  state.picture.well_formed =
      XML_Parse(parser, svg.data(), static_cast<int>(svg.size()), 1) != XML_STATUS_ERROR;
  XML_ParserFree(parser);
  return state.picture;
}

}  // namespace attograd::testing
