// plot/svg_graph.cpp — layering, ordering and placing a graph picture, then
// drawing it (svg_graph.hpp has the four steps).
//
// Vertices are the picture's nodes followed by the bend points of long edges;
// a segment joins two vertices on neighbouring ranks. Every loop below is
// bounded by the number of vertices and segments times a fixed number of
// sweeps, and counts its comparisons in GraphLayoutWork::steps.
#include "plot/svg_graph.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "plot/svg_document.hpp"
#include "tensor/atomic_file.hpp"
#include "tensor/error.hpp"

namespace attograd::plot {

namespace {

constexpr double kFont = 11;         // label text
constexpr double kLineHeight = 14;   // between label lines
constexpr double kPadX = 8;          // text to box, sideways
constexpr double kPadY = 5;          // text to box, up and down
constexpr double kNodeGap = 18;      // between two boxes on one rank
constexpr double kBendGap = 8;       // between a bend point and anything beside it
constexpr double kRankGap = 44;      // between two ranks
constexpr double kMargin = 16;       // around the picture
constexpr double kUpwardShift = 7;   // an upward edge, sideways from the downward one
constexpr double kEllipse = 1.3;     // an ellipse's box over its text's (room for the curve)
constexpr int kRankPasses = 2;       // passes that shorten edges after ranking
constexpr int kSweeps = 8;           // barycentre passes: down, up, down, …
constexpr int kPlacementPasses = 6;  // x passes: down, up, down, …

struct Vertex {
  int rank = 0;
  double width = 0;              // 0 for a bend point
  std::vector<size_t> up, down;  // neighbours on the rank above and below
};

// The box size of a node: its widest line and its line count, plus padding.
std::pair<double, double> node_size(const GraphNode& node) {
  double width = detail::widest(node.lines, kFont) + 2 * kPadX;
  double height = static_cast<double>(node.lines.size()) * kLineHeight + 2 * kPadY;
  if (node.kind == GraphNode::Kind::leaf) {
    width *= kEllipse;
    height *= kEllipse;
  }
  return {width, height};
}

// Edges as (upper, lower) node pairs with no cycle: an edge that would close
// one (found as a back edge of a depth-first walk) is turned around.
std::vector<bool> upward_edges(const GraphPicture& picture, int64_t& steps) {
  const size_t n = picture.nodes.size();
  std::vector<std::vector<size_t>> out(n);  // edge indices by source
  for (size_t e = 0; e < picture.edges.size(); ++e) out[picture.edges[e].from].push_back(e);
  std::vector<bool> upward(picture.edges.size(), false);
  enum : char { kNew, kOnPath, kDone };
  std::vector<char> state(n, kNew);
  std::vector<std::pair<size_t, size_t>> stack;  // (node, next out-edge)
  for (size_t start = 0; start < n; ++start) {
    if (state[start] != kNew) continue;
    stack.push_back({start, 0});
    state[start] = kOnPath;
    while (!stack.empty()) {
      auto& [v, next] = stack.back();
      ++steps;
      if (next == out[v].size()) {
        state[v] = kDone;
        stack.pop_back();
        continue;
      }
      const size_t e = out[v][next++];
      const size_t w = picture.edges[e].to;
      if (state[w] == kOnPath) {
        upward[e] = true;
      } else if (state[w] == kNew) {
        state[w] = kOnPath;
        stack.push_back({w, 0});
      }
    }
  }
  return upward;
}

// Step 1: ranks. Depth first: a node's rank is its longest path from the
// graph's inputs, so every edge points down. Then shorter edges: an op with
// more users than op inputs moves down to just above its first user, one
// with more op inputs than users up to just below its lowest input (either
// way the edges it touches get shorter in sum). Leaves are left out of that
// count and placed last, just above their first user: a leaf used once
// follows its user, and one used many times (a weight shared by the steps of
// an unrolled loop) runs down one shared trunk (see layout_graph), whatever
// the distance. So a product of leaves sits beside its user, not at the top.
std::vector<int> ranks_of(size_t n, const std::vector<std::pair<size_t, size_t>>& edges,
                          int64_t& steps) {
  std::vector<std::vector<size_t>> below(n), above(n);
  for (const auto& [u, v] : edges) {
    below[u].push_back(v);
    above[v].push_back(u);
  }
  std::vector<size_t> order;  // Kahn's order: a node after all its inputs
  std::vector<size_t> waiting(n);
  for (size_t v = 0; v < n; ++v) {
    waiting[v] = above[v].size();
    if (waiting[v] == 0) order.push_back(v);
  }
  std::vector<int> rank(n, 0);
  for (size_t at = 0; at < order.size(); ++at) {
    const size_t u = order[at];
    for (const size_t v : below[u]) {
      ++steps;
      rank[v] = std::max(rank[v], rank[u] + 1);
      if (--waiting[v] == 0) order.push_back(v);
    }
  }
  const auto is_leaf = [&](size_t v) { return above[v].empty(); };
  const auto op_inputs = [&](size_t v) {
    return static_cast<size_t>(std::count_if(above[v].begin(), above[v].end(), [&](size_t u) {
      ++steps;
      return !is_leaf(u);
    }));
  };
  for (int pass = 0; pass < kRankPasses; ++pass) {
    for (auto v = order.rbegin(); v != order.rend(); ++v) {  // down, users first
      if (is_leaf(*v) || below[*v].empty() || op_inputs(*v) >= below[*v].size()) continue;
      int first_user = std::numeric_limits<int>::max();
      for (const size_t w : below[*v]) first_user = std::min(first_user, rank[w]);
      rank[*v] = first_user - 1;
    }
    for (const size_t v : order) {  // up, inputs first
      if (is_leaf(v) || op_inputs(v) <= below[v].size()) continue;
      int lowest_input = -1;
      for (const size_t u : above[v])
        if (!is_leaf(u)) lowest_input = std::max(lowest_input, rank[u]);
      rank[v] = lowest_input + 1;
    }
  }
  for (const size_t v : order) {
    if (!is_leaf(v) || below[v].empty()) continue;
    int first_user = std::numeric_limits<int>::max();
    for (const size_t w : below[v]) first_user = std::min(first_user, rank[w]);
    rank[v] = first_user - 1;
  }
  // Ranks from 0, with none left empty.
  std::vector<int> sorted = rank;
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  for (int& r : rank)
    r = static_cast<int>(std::lower_bound(sorted.begin(), sorted.end(), r) - sorted.begin());
  return rank;
}

// Crossings between rank r and the rank below it: segments sorted by their
// upper end, then the lower ends' inversions, counted with a Fenwick tree.
int64_t crossings_below(const std::vector<size_t>& layer, const std::vector<Vertex>& vertices,
                        const std::vector<size_t>& position, size_t lower_size, int64_t& steps) {
  std::vector<std::pair<size_t, size_t>> segments;
  for (const size_t u : layer)
    for (const size_t v : vertices[u].down) segments.push_back({position[u], position[v]});
  std::sort(segments.begin(), segments.end(), [&](const auto& a, const auto& b) {
    ++steps;
    return a < b;
  });
  std::vector<int64_t> tree(lower_size + 1, 0);
  int64_t crossings = 0, seen = 0;
  for (const auto& [upper, lower] : segments) {
    int64_t at_or_left = 0;  // segments so far ending at or left of `lower`
    for (size_t i = lower + 1; i > 0; i -= i & (~i + 1)) {
      at_or_left += tree[i];
      ++steps;
    }
    crossings += seen - at_or_left;
    for (size_t i = lower + 1; i <= lower_size; i += i & (~i + 1)) {
      ++tree[i];
      ++steps;
    }
    ++seen;
  }
  return crossings;
}

int64_t all_crossings(const std::vector<std::vector<size_t>>& layers,
                      const std::vector<Vertex>& vertices, const std::vector<size_t>& position,
                      int64_t& steps) {
  int64_t total = 0;
  for (size_t r = 0; r + 1 < layers.size(); ++r)
    total += crossings_below(layers[r], vertices, position, layers[r + 1].size(), steps);
  return total;
}

// Step 2: barycentre sweeps, keeping the order with the fewest crossings.
void order_ranks(std::vector<std::vector<size_t>>& layers, const std::vector<Vertex>& vertices,
                 GraphLayoutWork& work) {
  std::vector<size_t> position(vertices.size());
  const auto number = [&](const std::vector<size_t>& layer) {
    for (size_t i = 0; i < layer.size(); ++i) position[layer[i]] = i;
  };
  for (const auto& layer : layers) number(layer);
  int64_t best = all_crossings(layers, vertices, position, work.steps);
  std::vector<std::vector<size_t>> best_layers = layers;
  std::vector<double> key(vertices.size());
  for (int sweep = 0; sweep < kSweeps && best > 0; ++sweep) {
    const bool down = sweep % 2 == 0;
    const size_t count = layers.size();
    for (size_t step = 1; step < count; ++step) {
      std::vector<size_t>& layer = layers[down ? step : count - 1 - step];
      for (const size_t v : layer) {
        const std::vector<size_t>& next = down ? vertices[v].up : vertices[v].down;
        if (next.empty()) {
          key[v] = static_cast<double>(position[v]);
          continue;
        }
        double sum = 0;
        for (const size_t w : next) sum += static_cast<double>(position[w]);
        key[v] = sum / static_cast<double>(next.size());
      }
      std::stable_sort(layer.begin(), layer.end(), [&](size_t a, size_t b) {
        ++work.steps;
        return key[a] < key[b];
      });
      number(layer);
    }
    ++work.sweeps;
    const int64_t crossings = all_crossings(layers, vertices, position, work.steps);
    if (crossings < best) {
      best = crossings;
      best_layers = layers;
    }
  }
  layers = std::move(best_layers);
  work.crossings = best;
}

// The x positions closest (least squares) to `wanted` that keep the layer's
// order with at least `gap[i]` between the centres of vertex i and i + 1:
// subtract the running gaps, fit a non-decreasing sequence by pooling
// adjacent violators, add the gaps back.
std::vector<double> fit_in_order(const std::vector<double>& wanted, const std::vector<double>& gap,
                                 int64_t& steps) {
  const size_t n = wanted.size();
  std::vector<double> offset(n, 0);
  for (size_t i = 1; i < n; ++i) offset[i] = offset[i - 1] + gap[i - 1];
  struct Block {
    double sum;
    size_t count;
  };
  std::vector<Block> blocks;
  for (size_t i = 0; i < n; ++i) {
    blocks.push_back({wanted[i] - offset[i], 1});
    while (blocks.size() > 1) {
      ++steps;
      const Block& last = blocks.back();
      const Block& before = blocks[blocks.size() - 2];
      if (before.sum / static_cast<double>(before.count) <=
          last.sum / static_cast<double>(last.count))
        break;
      const Block merged{before.sum + last.sum, before.count + last.count};
      blocks.pop_back();
      blocks.back() = merged;
    }
  }
  std::vector<double> x(n);
  size_t i = 0;
  for (const Block& block : blocks) {
    const double mean = block.sum / static_cast<double>(block.count);
    for (size_t k = 0; k < block.count; ++k, ++i) x[i] = mean + offset[i];
  }
  return x;
}

double gap_between(const Vertex& a, const Vertex& b) {
  const bool bend = a.width == 0 || b.width == 0;
  return (a.width + b.width) / 2 + (bend ? kBendGap : kNodeGap);
}

// Step 3: x centres, packed left to right, then pulled toward the neighbours.
std::vector<double> place_ranks(const std::vector<std::vector<size_t>>& layers,
                                const std::vector<Vertex>& vertices, int64_t& steps) {
  std::vector<double> x(vertices.size(), 0);
  for (const auto& layer : layers) {
    for (size_t i = 1; i < layer.size(); ++i)
      x[layer[i]] = x[layer[i - 1]] + gap_between(vertices[layer[i - 1]], vertices[layer[i]]);
  }
  for (int pass = 0; pass < kPlacementPasses; ++pass) {
    const bool down = pass % 2 == 0;
    const size_t count = layers.size();
    for (size_t step = 0; step < count; ++step) {
      const std::vector<size_t>& layer = layers[down ? step : count - 1 - step];
      if (layer.empty()) continue;
      std::vector<double> wanted(layer.size()), gap(layer.size() - 1);
      for (size_t i = 0; i < layer.size(); ++i) {
        const Vertex& v = vertices[layer[i]];
        const std::vector<size_t>& next = down ? v.up : v.down;
        wanted[i] = x[layer[i]];
        if (!next.empty()) {
          double sum = 0;
          for (const size_t w : next) sum += x[w];
          wanted[i] = sum / static_cast<double>(next.size());
        }
        if (i + 1 < layer.size()) gap[i] = gap_between(v, vertices[layer[i + 1]]);
      }
      const std::vector<double> fitted = fit_in_order(wanted, gap, steps);
      for (size_t i = 0; i < layer.size(); ++i) x[layer[i]] = fitted[i];
    }
  }
  return x;
}

}  // namespace

GraphLayout layout_graph(const GraphPicture& picture) {
  GraphLayout layout;
  GraphLayoutWork& work = layout.work;
  const size_t n = picture.nodes.size();
  layout.nodes.resize(n);
  layout.edges.resize(picture.edges.size());
  if (n == 0) return layout;

  // Step 1: ranks, then a bend point on every rank a long edge passes.
  const std::vector<bool> upward = upward_edges(picture, work.steps);
  std::vector<std::pair<size_t, size_t>> acyclic;  // (upper, lower)
  for (size_t e = 0; e < picture.edges.size(); ++e) {
    const GraphEdge& edge = picture.edges[e];
    acyclic.push_back(upward[e] ? std::pair{edge.to, edge.from} : std::pair{edge.from, edge.to});
  }
  const std::vector<int> rank = ranks_of(n, acyclic, work.steps);
  std::vector<Vertex> vertices(n);
  for (size_t v = 0; v < n; ++v) {
    vertices[v].rank = rank[v];
    std::tie(layout.nodes[v].width, layout.nodes[v].height) = node_size(picture.nodes[v]);
    vertices[v].width = layout.nodes[v].width;
    layout.nodes[v].rank = rank[v];
  }
  // Each edge's vertices, top down. The edges leaving one node share their
  // bend points: one trunk runs down from the node, one bend point per rank,
  // and each edge branches off it on the rank above its user. A parameter
  // used at every step of an unrolled loop is one line with branches, and the
  // bend points grow with the graph's depth, not with depth times uses.
  std::vector<std::vector<size_t>> chains(acyclic.size());
  std::vector<std::vector<size_t>> trunk(n);  // trunk[u][k]: u's bend point on rank rank[u] + 1 + k
  const auto link = [&](size_t upper, size_t lower) {
    vertices[upper].down.push_back(lower);
    vertices[lower].up.push_back(upper);
  };
  for (size_t e = 0; e < acyclic.size(); ++e) {
    const auto [u, v] = acyclic[e];
    const size_t span = static_cast<size_t>(rank[v] - rank[u]);
    while (trunk[u].size() + 1 < span) {
      const size_t bend = vertices.size();
      vertices.push_back({rank[u] + 1 + static_cast<int>(trunk[u].size()), 0, {}, {}});
      link(trunk[u].empty() ? u : trunk[u].back(), bend);
      trunk[u].push_back(bend);
      ++work.bends;
    }
    chains[e].push_back(u);
    chains[e].insert(chains[e].end(), trunk[u].begin(),
                     trunk[u].begin() + static_cast<ptrdiff_t>(span - 1));
    chains[e].push_back(v);
    link(chains[e][chains[e].size() - 2], v);
  }
  int ranks = 0;
  for (const Vertex& v : vertices) ranks = std::max(ranks, v.rank + 1);
  layout.ranks = ranks;
  std::vector<std::vector<size_t>> layers(static_cast<size_t>(ranks));
  for (size_t v = 0; v < vertices.size(); ++v)
    layers[static_cast<size_t>(vertices[v].rank)].push_back(v);

  // Steps 2 and 3.
  order_ranks(layers, vertices, work);
  std::vector<double> x = place_ranks(layers, vertices, work.steps);

  // Rows: each rank as tall as its tallest box; the picture starts at the margin.
  double left = 0, right = 0;
  bool first = true;
  for (size_t v = 0; v < vertices.size(); ++v) {
    const double half = vertices[v].width / 2;
    left = first ? x[v] - half : std::min(left, x[v] - half);
    right = first ? x[v] + half : std::max(right, x[v] + half);
    first = false;
  }
  for (double& centre : x) centre += kMargin - left;
  std::vector<double> row_top(static_cast<size_t>(ranks)),
      row_height(static_cast<size_t>(ranks), 0);
  for (size_t v = 0; v < n; ++v) {
    double& height = row_height[static_cast<size_t>(rank[v])];
    height = std::max(height, layout.nodes[v].height);
  }
  double y = kMargin;
  for (size_t r = 0; r < row_top.size(); ++r) {
    row_top[r] = y;
    y += row_height[r] + kRankGap;
  }
  layout.width = right - left + 2 * kMargin;
  layout.height = y - kRankGap + kMargin;
  for (size_t v = 0; v < n; ++v) {
    PlacedNode& node = layout.nodes[v];
    const size_t r = static_cast<size_t>(rank[v]);
    node.x = x[v] - node.width / 2;
    node.y = row_top[r] + (row_height[r] - node.height) / 2;
  }

  // Routes: from the upper node's bottom through the bend points to the lower
  // node's top; an upward edge runs the same way backwards.
  for (size_t e = 0; e < chains.size(); ++e) {
    auto& points = layout.edges[e].points;
    const size_t top = chains[e].front(), bottom = chains[e].back();
    points.push_back({x[top], layout.nodes[top].y + layout.nodes[top].height});
    for (size_t i = 1; i + 1 < chains[e].size(); ++i) {
      const size_t r = static_cast<size_t>(vertices[chains[e][i]].rank);
      points.push_back({x[chains[e][i]], row_top[r] + row_height[r] / 2});
    }
    points.push_back({x[bottom], layout.nodes[bottom].y});
    layout.edges[e].upward = upward[e];
    if (upward[e]) {
      // Beside, not on top of, the downward edge a module cycle usually pairs it with.
      for (auto& point : points) point.first += kUpwardShift;
      std::reverse(points.begin(), points.end());
    }
  }
  return layout;
}

// ---------------------------------------------------------------- drawing

namespace {

const char* kind_name(GraphNode::Kind kind) {
  switch (kind) {
    case GraphNode::Kind::op:
      return "op";
    case GraphNode::Kind::leaf:
      return "leaf";
    case GraphNode::Kind::module:
      return "module";
    case GraphNode::Kind::note:
      break;
  }
  return "note";
}

// Fill and stroke: ops blue, parameters (leaves that require grad) amber,
// constants white, modules grey, the note pale yellow and dashed.
std::string node_style(const GraphNode& node) {
  const bool parameter =
      std::find(node.lines.begin(), node.lines.end(), "requires_grad") != node.lines.end();
  const double stroke = node.root ? 2.2 : 1;
  switch (node.kind) {
    case GraphNode::Kind::op:
      return fmt::format("fill=\"#e8f0fb\" stroke=\"#3d6aa8\" stroke-width=\"{}\"", stroke);
    case GraphNode::Kind::leaf:
      return fmt::format("fill=\"{}\" stroke=\"{}\" stroke-width=\"{}\"",
                         parameter ? "#fdf0d5" : "#ffffff", parameter ? "#a8731d" : "#888888",
                         stroke);
    case GraphNode::Kind::module:
      return "fill=\"#dddddd\" stroke=\"#555555\" stroke-width=\"1\"";
    case GraphNode::Kind::note:
      break;
  }
  return "fill=\"#fffbe0\" stroke=\"#999999\" stroke-dasharray=\"4 3\"";
}

// One cubic curve per stretch between points, leaving and entering each
// point vertically.
std::string curve(const std::vector<std::pair<double, double>>& points) {
  std::string d = fmt::format("M{},{}", detail::px(points[0].first), detail::px(points[0].second));
  for (size_t i = 1; i < points.size(); ++i) {
    const auto [x0, y0] = points[i - 1];
    const auto [x1, y1] = points[i];
    const double half = (y1 - y0) / 2;
    d += fmt::format(" C{},{} {},{} {},{}", detail::px(x0), detail::px(y0 + half), detail::px(x1),
                     detail::px(y1 - half), detail::px(x1), detail::px(y1));
  }
  return d;
}

}  // namespace

std::string graph_svg(const GraphPicture& picture) {
  return graph_svg(picture, layout_graph(picture));
}

std::string graph_svg(const GraphPicture& picture, const GraphLayout& layout) {
  using detail::px;
  check(layout.nodes.size() == picture.nodes.size() && layout.edges.size() == picture.edges.size(),
        "graph_svg: the layout has {} nodes and {} edges but the picture {} and {}; lay out this "
        "picture with layout_graph(picture)",
        layout.nodes.size(), layout.edges.size(), picture.nodes.size(), picture.edges.size());
  detail::Svg svg(static_cast<int>(std::ceil(std::max(layout.width, 1.0))),
                  static_cast<int>(std::ceil(std::max(layout.height, 1.0))));
  // The marker's id is the same in every graph picture, so two pictures in one
  // HTML page share one identical arrowhead.
  svg.raw(
      "<defs><marker id=\"attograd-graph-arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" "
      "markerWidth=\"7\" markerHeight=\"7\" orient=\"auto\"><path d=\"M0,0 L10,5 L0,10 z\" "
      "fill=\"#555555\"/></marker></defs>\n");
  svg.raw("<g class=\"edges\" fill=\"none\" stroke=\"#555555\">\n");
  for (size_t e = 0; e < picture.edges.size(); ++e) {
    const GraphEdge& edge = picture.edges[e];
    const auto& points = layout.edges[e].points;
    svg.raw(
        fmt::format("<path class=\"edge{}\" data-from=\"{}\" data-to=\"{}\"{} d=\"{}\"{} "
                    "marker-end=\"url(#attograd-graph-arrow)\"/>\n",
                    layout.edges[e].upward ? " upward" : "",
                    xml_escape(picture.nodes[edge.from].id), xml_escape(picture.nodes[edge.to].id),
                    edge.count > 1 ? fmt::format(" data-count=\"{}\"", edge.count) : std::string(),
                    curve(points), edge.dashed ? " stroke-dasharray=\"5 4\"" : ""));
  }
  svg.raw("</g>\n<g class=\"edge-counts\">\n");
  for (size_t e = 0; e < picture.edges.size(); ++e) {
    if (picture.edges[e].count < 2) continue;
    const auto& points = layout.edges[e].points;
    const auto [x0, y0] = points[points.size() - 2];
    const auto [x1, y1] = points.back();
    svg.text((x0 + x1) / 2 + 4, (y0 + y1) / 2, fmt::format("×{}", picture.edges[e].count), 10,
             "start");
  }
  svg.raw("</g>\n<g class=\"nodes\">\n");
  for (size_t v = 0; v < picture.nodes.size(); ++v) {
    const GraphNode& node = picture.nodes[v];
    const PlacedNode& place = layout.nodes[v];
    svg.raw(fmt::format("<g class=\"node {}{}\" data-node=\"{}\">\n", kind_name(node.kind),
                        node.root ? " root" : "", xml_escape(node.id)));
    if (node.kind == GraphNode::Kind::leaf) {
      svg.raw(fmt::format("<ellipse cx=\"{}\" cy=\"{}\" rx=\"{}\" ry=\"{}\" {}/>\n",
                          px(place.x + place.width / 2), px(place.y + place.height / 2),
                          px(place.width / 2), px(place.height / 2), node_style(node)));
    } else {
      svg.rect(place.x, place.y, place.width, place.height,
               fmt::format("rx=\"3\" {}", node_style(node)));
    }
    const double text_top =
        place.y + (place.height - static_cast<double>(node.lines.size()) * kLineHeight) / 2;
    for (size_t line = 0; line < node.lines.size(); ++line) {
      svg.text(place.x + place.width / 2,
               text_top + (static_cast<double>(line) + 0.75) * kLineHeight, node.lines[line], kFont,
               "middle", 0, line == 0 ? "font-weight=\"bold\"" : "");
    }
    svg.raw("</g>\n");
  }
  svg.raw("</g>\n");
  return std::move(svg).finish();
}

void save_graph_svg(const std::filesystem::path& path, const GraphPicture& picture) {
  write_file_atomically(path, graph_svg(picture));
}

}  // namespace attograd::plot
