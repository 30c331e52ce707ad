// plot/svg_graph.hpp — the recorded graph drawn as SVG, laid out here, with
// no Graphviz.
//
//   GraphPicture picture = graph_picture(loss, DotOptions().names(model.named_parameters()));
//   std::string svg = plot::graph_svg(picture);     // or plot::save_graph_svg("graph.svg",
//   picture)
//   // to_svg(loss, options) (plot/to_svg.hpp) does both steps for a tensor
//
// What is drawn is decided in autograd/inspect (graph_picture.hpp: the same
// nodes, labels, module boxes and node cap as to_dot); how it is drawn is
// decided here, in four steps of the classic layered ("Sugiyama") drawing:
//
//   1. ranks: each node's rank is its longest path from the graph's inputs,
//      so every arrow points down; then ops move toward the side with more
//      edges (shorter edges in sum) and leaves to just above their first
//      user. An edge spanning several ranks gets an invisible bend point on
//      each rank in between, shared by the edges leaving one node.
//   2. order: a few sweeps down and up the ranks sort each rank by the mean
//      position of its neighbours in the rank before (the barycentre
//      heuristic), keeping the order with the fewest crossings.
//   3. x: each rank's nodes move toward the mean x of their neighbours, as
//      close as they can while keeping their order and a gap between boxes
//      sized by their text (a least-squares fit under order constraints).
//   4. drawing: boxes for ops, ellipses for leaves, grey boxes for modules, a
//      note for what the cap left out; each edge one cubic curve through its
//      bend points, with an arrowhead at the node that used it.
//
// The parts are tagged for tests and scripts: <g class="node op|leaf|module|note"
// data-node="t3"> holds a node's shape and one <text> per label line;
// <path class="edge" data-from="t7" data-to="t3"> is an edge (data-count when
// it stands for several uses; class "edge upward" when it closes a cycle that
// module boxes made and so has to point up). Ids are those of the DOT text.
//
// This file reads a picture but never a tensor, so the plot library stays
// free of the element type; it sits above autograd/ (tensor <- autograd <- nn
// <- models <- plot <- examples), so including autograd/inspect/graph_picture.hpp
// points down.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "autograd/inspect/graph_picture.hpp"

namespace attograd::plot {

// How much work a layout did, counted rather than timed.
struct GraphLayoutWork {
  int sweeps = 0;         // barycentre passes over the ranks (each one way, down or up)
  int64_t steps = 0;      // comparisons while sorting and counting crossings, and moves
  int64_t crossings = 0;  // edge crossings left between neighbouring ranks
  size_t bends = 0;       // bend points added on edges spanning several ranks
};

struct PlacedNode {
  double x = 0, y = 0, width = 0, height = 0;  // the box (or the ellipse's bounding box)
  int rank = 0;                                // 0 at the top
};

struct RoutedEdge {
  std::vector<std::pair<double, double>> points;  // from the input's node to its user's
  bool upward = false;  // drawn up: it closes a cycle that module boxes made
};

struct GraphLayout {
  std::vector<PlacedNode> nodes;  // one per picture node, in its order
  std::vector<RoutedEdge> edges;  // one per picture edge, in its order
  double width = 0, height = 0;
  int ranks = 0;
  GraphLayoutWork work;
};

// Places every node of `picture` and routes every edge (steps 1–3 above).
GraphLayout layout_graph(const GraphPicture& picture);

// The picture laid out and drawn, as one SVG document.
std::string graph_svg(const GraphPicture& picture);
std::string graph_svg(const GraphPicture& picture, const GraphLayout& layout);

// graph_svg written to `path` atomically.
void save_graph_svg(const std::filesystem::path& path, const GraphPicture& picture);

}  // namespace attograd::plot
