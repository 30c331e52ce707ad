// plot/to_svg.hpp — to_dot's twin: the graph behind a tensor as an SVG
// picture, laid out by plot/svg_graph.cpp (no Graphviz).
//
//   #include "plot/to_svg.hpp"       // link attograd::plot as well
//   std::string svg = to_svg(loss, DotOptions().names(model.named_parameters()));
//   save_svg("graph.svg", loss, DotOptions().collapse_depth(1));
//
// Header only: the plot library is built once for float and double programs
// and never sees a tensor, so these two lines compile at the program's own
// element type. The labels, module boxes and node cap are to_dot's
// (autograd/inspect/graph_picture.hpp); call it before backward(), or after
// backward(…, retain_graph=true).
#pragma once

#include <filesystem>
#include <string>

#include "autograd/inspect/dot.hpp"
#include "autograd/inspect/graph_picture.hpp"
#include "plot/svg_graph.hpp"

namespace attograd {

// The graph that produced `root`, as one SVG document.
inline std::string to_svg(const Tensor& root, const DotOptions& options = DotOptions()) {
  return plot::graph_svg(graph_picture(root, options));
}

// to_svg written to `path` atomically.
inline void save_svg(const std::filesystem::path& path, const Tensor& root,
                     const DotOptions& options = DotOptions()) {
  plot::save_graph_svg(path, graph_picture(root, options));
}

}  // namespace attograd
