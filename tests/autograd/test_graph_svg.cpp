// tests/autograd/test_graph_svg.cpp — to_svg (plot/to_svg.hpp): the recorded
// graph laid out and drawn without Graphviz. The SVG is parsed with expat and
// checked for what a reader needs: every node with its label and every use as
// an arrow, no box over another, arrows running from inputs down to their
// users, and a layout whose work grows with the graph, not faster.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "attograd.hpp"
#include "plot/to_svg.hpp"
#include "tests/support/micrograd.hpp"
#include "tests/support/svg.hpp"

namespace test_graph_svg {

using namespace attograd;
using attograd::testing::Element;
using attograd::testing::micrograd_expression;
using attograd::testing::parse_svg;
using attograd::testing::ParsedSvg;

namespace {

struct Box {
  double x = 0, y = 0, width = 0, height = 0;
};

struct DrawnNode {
  std::string kind;  // the <g>'s class, e.g. "node op root"
  Box box;
  std::vector<std::string> lines;
};

struct DrawnEdge {
  std::string from, to;
  int count = 1;
  bool upward = false;
  std::pair<double, double> start, end;
};

double number(const Element& element, const std::string& name) {
  return std::stod(element.attribute(name));
}

// The path's first point ("M x,y") and last point (the last "x,y").
std::pair<std::pair<double, double>, std::pair<double, double>> ends_of(const std::string& d) {
  const auto point_at = [&](size_t at) {
    const size_t comma = d.find(',', at);
    return std::pair{std::stod(d.substr(at, comma - at)), std::stod(d.substr(comma + 1))};
  };
  return {point_at(1), point_at(d.rfind(' ') + 1)};
}

// Nodes by data-node id and edges in document order, read back from the SVG.
struct DrawnGraph {
  std::map<std::string, DrawnNode> nodes;
  std::vector<DrawnEdge> edges;
};

DrawnGraph read_graph(const ParsedSvg& svg) {
  DrawnGraph graph;
  std::string current;  // the node whose <g> was opened last
  for (const Element& element : svg.elements) {
    if (element.tag == "g" && !element.attribute("data-node").empty()) {
      current = element.attribute("data-node");
      graph.nodes[current].kind = element.attribute("class");
      continue;
    }
    const bool in_node = element.inside("node");
    if (in_node && element.tag == "rect") {
      graph.nodes[current].box = {number(element, "x"), number(element, "y"),
                                  number(element, "width"), number(element, "height")};
    } else if (in_node && element.tag == "ellipse") {
      const double rx = number(element, "rx"), ry = number(element, "ry");
      graph.nodes[current].box = {number(element, "cx") - rx, number(element, "cy") - ry, 2 * rx,
                                  2 * ry};
    } else if (in_node && element.tag == "text") {
      graph.nodes[current].lines.push_back(element.text);
    } else if (element.tag == "path" && element.attribute("class").rfind("edge", 0) == 0) {
      DrawnEdge edge;
      edge.from = element.attribute("data-from");
      edge.to = element.attribute("data-to");
      if (!element.attribute("data-count").empty())
        edge.count = std::stoi(element.attribute("data-count"));
      edge.upward = element.attribute("class") == "edge upward";
      std::tie(edge.start, edge.end) = ends_of(element.attribute("d"));
      graph.edges.push_back(edge);
    }
  }
  return graph;
}

bool overlap(const Box& a, const Box& b) {
  return a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
}

// Pairs of nodes whose boxes overlap, as "t3 and t7" (none expected).
std::vector<std::string> overlapping(const DrawnGraph& graph) {
  std::vector<std::string> pairs;
  for (auto a = graph.nodes.begin(); a != graph.nodes.end(); ++a) {
    for (auto b = std::next(a); b != graph.nodes.end(); ++b) {
      if (overlap(a->second.box, b->second.box)) pairs.push_back(a->first + " and " + b->first);
    }
  }
  return pairs;
}

// Edges that do not run from the bottom of their input's box down to the top
// of their user's box (upward edges, which close module cycles, excepted).
std::vector<std::string> not_pointing_down(const DrawnGraph& graph) {
  std::vector<std::string> wrong;
  for (const DrawnEdge& edge : graph.edges) {
    if (edge.upward) continue;
    const Box& from = graph.nodes.at(edge.from).box;
    const Box& to = graph.nodes.at(edge.to).box;
    const bool down = from.y + from.height <= to.y &&
                      std::abs(edge.start.second - (from.y + from.height)) < 0.01 &&
                      std::abs(edge.end.second - to.y) < 0.01;
    if (!down) wrong.push_back(edge.from + " -> " + edge.to);
  }
  return wrong;
}

// An unrolled recurrence over `steps` steps, six tensors a step (the input
// x_t, two products, their sum, its tanh and the running sum of the states):
// the shape of a small RNN's graph.
Tensor unrolled(int steps, std::vector<std::pair<std::string, Tensor>>& names) {
  const Tensor w = requires_grad_(scalar(0.5));
  const Tensor u = requires_grad_(scalar(0.25));
  names = {{"rnn.w", w}, {"rnn.u", u}};
  Tensor h = scalar(0.0);
  Tensor total = scalar(0.0);
  for (int t = 0; t < steps; ++t) {
    const Tensor x = scalar(static_cast<real>(t % 7) / 7);
    h = tanh(h * w + x * u);
    total = total + h;
  }
  return total;
}

}  // namespace

TEST_CASE("to_svg draws every node of the micrograd graph with its label and every use as an arrow",
          "[graph-svg]") {
  const auto m = micrograd_expression();
  const DotOptions options = DotOptions().names({{"a", m.a}, {"b", m.b}});
  const ParsedSvg svg = parse_svg(to_svg(m.g, options));
  REQUIRE(svg.error.empty());
  const DrawnGraph graph = read_graph(svg);

  // 25 ops and 8 leaves (a, b and six constants), each label line as text.
  REQUIRE(graph.nodes.size() == 33);
  std::map<std::string, int> first_lines;
  int ops = 0, leaves = 0;
  for (const auto& [id, node] : graph.nodes) {
    REQUIRE(!node.lines.empty());
    ++first_lines[node.lines[0]];
    ops += node.kind.rfind("node op", 0) == 0;
    leaves += node.kind == "node leaf";
  }
  CHECK(ops == 25);
  CHECK(leaves == 8);
  CHECK(first_lines["add"] == 13);
  CHECK(first_lines["mul"] == 3);
  CHECK(first_lines["pow"] == 2);
  CHECK(first_lines["sub"] == 2);
  CHECK(first_lines["div"] == 2);
  CHECK(first_lines["relu"] == 2);
  CHECK(first_lines["neg"] == 1);
  CHECK(first_lines["constant"] == 6);
  CHECK(graph.nodes.at("t0").kind == "node op root");
  CHECK(graph.nodes.at("t0").lines == std::vector<std::string>{"add", "()"});
  for (const char* leaf : {"a", "b"}) {
    CHECK(first_lines[leaf] == 1);
  }

  // Each node's lines are the picture's (the labels to_dot writes), and each
  // edge of the picture is one path: 20 binary ops and 5 unary ones make 45 uses.
  const GraphPicture picture = graph_picture(m.g, options);
  for (const GraphNode& node : picture.nodes) {
    INFO(node.id);
    REQUIRE(graph.nodes.count(node.id) == 1);
    CHECK(graph.nodes.at(node.id).lines == node.lines);
  }
  std::map<std::pair<std::string, std::string>, int> drawn;
  int uses = 0;
  for (const DrawnEdge& edge : graph.edges) {
    ++drawn[{edge.from, edge.to}];
    uses += edge.count;
  }
  CHECK(graph.edges.size() == picture.edges.size());
  for (const GraphEdge& edge : picture.edges) {
    CHECK(drawn[{picture.nodes[edge.from].id, picture.nodes[edge.to].id}] == 1);
  }
  CHECK(uses == 45);
}

TEST_CASE("to_svg: no two boxes overlap and every arrow runs down from an input to its user",
          "[graph-svg]") {
  SECTION("the micrograd expression") {
    const auto m = micrograd_expression();
    const DrawnGraph graph =
        read_graph(parse_svg(to_svg(m.g, DotOptions().names({{"a", m.a}, {"b", m.b}}))));
    REQUIRE(graph.nodes.size() == 33);
    CHECK(overlapping(graph).empty());
    CHECK(not_pointing_down(graph).empty());
    // The root, which everything feeds, is the lowest node.
    const Box& root = graph.nodes.at("t0").box;
    for (const auto& [id, node] : graph.nodes) CHECK(node.box.y <= root.y);
  }
  SECTION("an unrolled recurrence of 300 tensors") {
    std::vector<std::pair<std::string, Tensor>> names;
    const Tensor total = unrolled(50, names);
    const ParsedSvg svg = parse_svg(to_svg(total, DotOptions().names(names)));
    REQUIRE(svg.error.empty());
    const DrawnGraph graph = read_graph(svg);
    CHECK(graph.nodes.size() == 50 * 6 + 4);  // a step: x, 2 mul, add, tanh, add; w, u, 2 zeros
    CHECK(overlapping(graph).empty());
    CHECK(not_pointing_down(graph).empty());
  }
}

TEST_CASE(
    "layout_graph: a 300-node graph takes a fixed number of sweeps and work near linear in "
    "its size",
    "[graph-svg]") {
  std::vector<std::pair<std::string, Tensor>> names;
  const GraphPicture small = graph_picture(unrolled(50, names), DotOptions().max_nodes(0));
  const GraphPicture large = graph_picture(unrolled(100, names), DotOptions().max_nodes(0));
  REQUIRE(small.nodes.size() == 304);
  REQUIRE(large.nodes.size() == 604);
  const plot::GraphLayout small_layout = plot::layout_graph(small);
  const plot::GraphLayout large_layout = plot::layout_graph(large);
  INFO("steps: " << small_layout.work.steps << " for 304 nodes, " << large_layout.work.steps
                 << " for 604");
  CHECK(small_layout.work.sweeps <= 8);
  CHECK(large_layout.work.sweeps <= 8);
  // n log n sorting and crossing counting: twice the graph, a little over
  // twice the work. Comparing every pair of nodes would be four times.
  CHECK(large_layout.work.steps < 3 * small_layout.work.steps);
  // And in absolute terms: a few hundred steps per node and edge.
  const size_t size = small.nodes.size() + small.edges.size() + small_layout.work.bends;
  CHECK(small_layout.work.steps < static_cast<int64_t>(400 * size));
}

TEST_CASE("to_svg draws modules as grey boxes, the node cap's note, and module cycles upward",
          "[graph-svg]") {
  // encoder.w feeds an op of module "encoder"; a mixed add leaves the boxes;
  // encoder.v uses that add, so encoder -> add -> encoder is a cycle.
  const Tensor input = scalar(1.0);
  const Tensor w = requires_grad_(scalar(2.0)), v = requires_grad_(scalar(3.0));
  const Tensor d = requires_grad_(scalar(4.0));
  const Tensor x = input * w;
  const Tensor y = x * d;
  const Tensor mixed = x + y;
  const Tensor out = mixed * v;
  const std::vector<std::pair<std::string, Tensor>> names = {
      {"encoder.w", w}, {"encoder.v", v}, {"decoder.d", d}};

  const DrawnGraph boxed =
      read_graph(parse_svg(to_svg(out, DotOptions().names(names).collapse_depth(1))));
  int modules = 0, upward = 0;
  for (const auto& [id, node] : boxed.nodes) {
    if (node.kind != "node module") continue;
    ++modules;
    CHECK((node.lines[0] == "encoder" || node.lines[0] == "decoder"));
  }
  for (const DrawnEdge& edge : boxed.edges) upward += edge.upward;
  CHECK(modules == 2);
  CHECK(upward == 1);
  CHECK(overlapping(boxed).empty());
  CHECK(not_pointing_down(boxed).empty());

  const DrawnGraph capped = read_graph(parse_svg(to_svg(out, DotOptions().max_nodes(3))));
  REQUIRE(capped.nodes.count("omitted") == 1);
  CHECK(capped.nodes.at("omitted").kind == "node note");
  CHECK(capped.nodes.at("omitted").lines[0] == "5 more nodes not drawn");
  CHECK(capped.nodes.size() == 4);
  CHECK(overlapping(capped).empty());
  CHECK(not_pointing_down(capped).empty());
}

TEST_CASE("save_svg writes the same SVG as to_svg", "[graph-svg]") {
  const auto m = micrograd_expression();
  const std::filesystem::path path = std::filesystem::temp_directory_path() /
                                     ("attograd_graph_svg_" + std::to_string(::getpid()) + ".svg");
  save_svg(path, m.g);
  std::ifstream in(path, std::ios::binary);
  const std::string written{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  std::filesystem::remove(path);
  CHECK(written == to_svg(m.g));
}

}  // namespace test_graph_svg
