// autograd/inspect/dot.cpp — walking a graph into DOT text.
//
// Three passes over the tensors below the root: find them (breadth first, so
// the nearest to the root come first and survive a node cap), give each op a
// module when boxes are asked for (inputs before users, without recursion),
// then make the picture (graph_picture.hpp) of what is left after boxing and
// capping. to_dot writes that picture as DOT; plot/svg_graph.cpp draws it.
#include "autograd/inspect/dot.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <map>
#include <mutex>
#include <unordered_map>

#include "autograd/engine.hpp"
#include "autograd/inspect/graph_picture.hpp"
#include "autograd/inspect/hooks.hpp"
#include "tensor/error.hpp"

namespace attograd {

namespace {

struct GraphTensor {
  std::shared_ptr<TensorImpl> impl;
  const Node* node = nullptr;  // null for a leaf
  std::vector<size_t> inputs;  // indices into the tensor list, in input order
};

// Every tensor below root, breadth first from it (root is number 0).
std::vector<GraphTensor> collect(const Tensor& root) {
  std::vector<GraphTensor> tensors;
  std::unordered_map<const TensorImpl*, size_t> number;
  const auto visit = [&](const Tensor& t) {
    const auto [it, added] = number.emplace(t.impl_ptr().get(), tensors.size());
    if (added) tensors.push_back({t.impl_ptr(), grad_fn(t), {}});
    return it->second;
  };
  visit(root);
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Node* node = tensors[i].node;
    if (node == nullptr) continue;
    check(!node->released,
          "to_dot: the graph behind '{}' was freed by backward(); call to_dot before backward(), "
          "or pass retain_graph=true to backward() to draw it afterwards",
          node->name);
    for (const Tensor& input : node->inputs) {
      if (!input.defined()) continue;
      const size_t j = visit(input);
      tensors[i].inputs.push_back(j);
    }
  }
  return tensors;
}

// A parameter's module at `depth`: its name without the last part, cut to
// `depth` parts ("encoder.gru.weight_ih_l0" -> "encoder" at depth 1).
std::string module_of(const std::string& name, int depth) {
  const size_t last = name.rfind('.');
  if (last == std::string::npos) return {};
  size_t end = last;
  size_t from = 0;
  for (int part = 0; part < depth; ++part) {
    end = std::min(name.find('.', from), last);
    if (end == last) break;
    from = end + 1;
  }
  return name.substr(0, end);
}

// The one module the op inputs (or, with `parameters`, the leaf inputs) that
// have one agree on; "" if none has one or they disagree.
std::string common_module(const std::vector<size_t>& inputs, const std::vector<std::string>& module,
                          const std::vector<GraphTensor>& tensors, bool parameters) {
  std::string common;
  for (const size_t input : inputs) {
    if (module[input].empty() || (tensors[input].node == nullptr) != parameters) continue;
    if (!common.empty() && common != module[input]) return {};
    common = module[input];
  }
  return common;
}

// The module of every tensor ("" for none), inputs before the ops using them.
std::vector<std::string> modules_of(const std::vector<GraphTensor>& tensors,
                                    const std::vector<std::string>& leaf_names, int depth) {
  std::vector<std::string> module(tensors.size());
  std::vector<char> done(tensors.size(), 0);
  std::vector<std::pair<size_t, size_t>> stack;  // (tensor, next input to visit)
  for (size_t start = 0; start < tensors.size(); ++start) {
    if (done[start]) continue;
    stack.push_back({start, 0});
    while (!stack.empty()) {
      auto& [t, next] = stack.back();
      if (next < tensors[t].inputs.size()) {
        const size_t input = tensors[t].inputs[next++];
        if (!done[input]) stack.push_back({input, 0});
        continue;
      }
      if (tensors[t].node == nullptr) {
        module[t] = leaf_names[t].empty() ? std::string() : module_of(leaf_names[t], depth);
      } else {
        module[t] = common_module(tensors[t].inputs, module, tensors, /*parameters=*/true);
        if (module[t].empty()) {
          module[t] = common_module(tensors[t].inputs, module, tensors, /*parameters=*/false);
        }
      }
      done[t] = 1;
      stack.pop_back();
    }
  }
  return module;
}

// A tensor's values as one label line: "data [1 2 3 …]".
std::string values_line(const char* what, const Tensor& t, int64_t limit) {
  const std::vector<real> values = t.to_vector();
  std::string line = fmt::format("{} [", what);
  for (size_t i = 0; i < values.size() && static_cast<int64_t>(i) < limit; ++i) {
    line += fmt::format("{}{:.4g}", i == 0 ? "" : " ", values[i]);
  }
  return line + (static_cast<int64_t>(values.size()) > limit ? " …]" : "]");
}

std::vector<std::string> tensor_label(const GraphTensor& t, const std::string& leaf_name,
                                      const DotOptions& options) {
  const Tensor tensor(t.impl);
  std::vector<std::string> lines;
  if (t.node != nullptr) {
    lines.push_back(t.node->name);
  } else {
    lines.push_back(leaf_name.empty() ? (requires_grad(tensor) ? "leaf" : "constant") : leaf_name);
  }
  lines.push_back(fmt::format("{}", tensor.shape()));
  if (t.node == nullptr && requires_grad(tensor)) lines.push_back("requires_grad");
  if (options.show_values()) {
    lines.push_back(values_line("data", tensor, options.show_values_limit()));
    const Tensor gradient = grad(tensor);
    if (gradient.defined()) {
      lines.push_back(values_line("grad", gradient, options.show_values_limit()));
    }
  }
  return lines;
}

// Every node (tensors, or module boxes standing for many) nearest the root
// first, and the counted edges between them, before the cap.
GraphPicture all_nodes(const std::vector<GraphTensor>& tensors,
                       const std::vector<std::string>& leaf_names,
                       const std::vector<std::string>& module, const DotOptions& options) {
  GraphPicture picture;
  struct Box {
    size_t node = 0;
    int ops = 0;
    int leaves = 0;
  };
  std::map<std::string, Box> boxes;  // by module name
  std::vector<size_t> node_of(tensors.size());
  for (size_t t = 0; t < tensors.size(); ++t) {
    if (!module[t].empty()) {
      const auto [box, added] = boxes.try_emplace(module[t]);
      if (added) {
        box->second.node = picture.nodes.size();
        picture.nodes.push_back({fmt::format("module{}", boxes.size() - 1),
                                 GraphNode::Kind::module,
                                 {module[t]},
                                 false});
      }
      ++(tensors[t].node != nullptr ? box->second.ops : box->second.leaves);
      node_of[t] = box->second.node;
      continue;
    }
    node_of[t] = picture.nodes.size();
    picture.nodes.push_back(
        {fmt::format("t{}", t),
         tensors[t].node != nullptr ? GraphNode::Kind::op : GraphNode::Kind::leaf,
         tensor_label(tensors[t], leaf_names[t], options), t == 0});
  }
  for (const auto& [name, box] : boxes) {
    picture.nodes[box.node].lines.push_back(
        fmt::format("{} ops, {} parameters", box.ops, box.leaves));
  }
  std::map<std::pair<size_t, size_t>, size_t> edge_at;  // (from, to) -> index in edges
  for (size_t t = 0; t < tensors.size(); ++t) {
    for (const size_t input : tensors[t].inputs) {
      const size_t from = node_of[input], to = node_of[t];
      if (from == to) continue;  // inside one module box
      const auto [found, added] = edge_at.try_emplace({from, to}, picture.edges.size());
      if (added) {
        picture.edges.push_back({from, to, 1, false});
      } else {
        ++picture.edges[found->second].count;
      }
    }
  }
  return picture;
}

// The nodes nearest the root up to `max_nodes` (0: all), and a note with a
// dashed edge to each kept node that lost an input.
GraphPicture cap(GraphPicture all, int64_t max_nodes) {
  const size_t kept =
      max_nodes > 0 ? std::min<size_t>(all.nodes.size(), max_nodes) : all.nodes.size();
  if (kept == all.nodes.size()) return all;
  GraphPicture picture;
  picture.nodes.assign(all.nodes.begin(), all.nodes.begin() + static_cast<ptrdiff_t>(kept));
  std::vector<size_t> cut;  // kept nodes with an input left out
  for (const GraphEdge& edge : all.edges) {
    if (edge.to >= kept) continue;
    if (edge.from < kept) {
      picture.edges.push_back(edge);
    } else if (std::find(cut.begin(), cut.end(), edge.to) == cut.end()) {
      cut.push_back(edge.to);
    }
  }
  const size_t note = picture.nodes.size();
  picture.nodes.push_back({"omitted",
                           GraphNode::Kind::note,
                           {fmt::format("{} more nodes not drawn", all.nodes.size() - kept),
                            fmt::format("(max_nodes = {})", max_nodes)},
                           false});
  for (const size_t to : cut) picture.edges.push_back({note, to, 1, true});
  return picture;
}

std::string escape(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

std::string dot_label(const GraphNode& node) {
  std::string label;
  for (const std::string& line : node.lines) label += (label.empty() ? "" : "\\n") + escape(line);
  return label;
}

std::string dot_attributes(const GraphNode& node) {
  switch (node.kind) {
    case GraphNode::Kind::op:
    case GraphNode::Kind::leaf:
      return fmt::format("shape={}, label=\"{}\"{}",
                         node.kind == GraphNode::Kind::op ? "box" : "ellipse", dot_label(node),
                         node.root ? ", penwidth=2" : "");
    case GraphNode::Kind::module:
      return fmt::format("shape=box3d, style=filled, fillcolor=lightgrey, label=\"{}\"",
                         dot_label(node));
    case GraphNode::Kind::note:
      break;
  }
  return fmt::format("shape=note, label=\"{}\"", dot_label(node));
}

std::vector<std::string> leaf_names_of(const std::vector<GraphTensor>& tensors,
                                       const DotOptions& options) {
  std::unordered_map<const TensorImpl*, std::string> name_of;
  for (const auto& [name, tensor] : options.names()) {
    if (tensor.defined()) name_of.emplace(tensor.impl_ptr().get(), name);
  }
  std::vector<std::string> leaf_names(tensors.size());
  for (size_t t = 0; t < tensors.size(); ++t) {
    const auto found = name_of.find(tensors[t].impl.get());
    if (found != name_of.end() && tensors[t].node == nullptr) leaf_names[t] = found->second;
  }
  return leaf_names;
}

}  // namespace

GraphPicture graph_picture(const Tensor& root, const DotOptions& options) {
  check(root.defined(), "to_dot: got an undefined tensor (default-constructed Tensor)");
  check(options.max_nodes() >= 0, "to_dot: max_nodes is {}; it must be 0 (no limit) or more",
        options.max_nodes());
  const std::vector<GraphTensor> tensors = collect(root);
  const std::vector<std::string> leaf_names = leaf_names_of(tensors, options);
  const std::vector<std::string> module =
      options.collapse_depth() > 0 ? modules_of(tensors, leaf_names, options.collapse_depth())
                                   : std::vector<std::string>(tensors.size());
  return cap(all_nodes(tensors, leaf_names, module, options), options.max_nodes());
}

std::string dot_text(const GraphPicture& picture) {
  std::string text =
      "digraph attograd {\n  rankdir=LR;\n  node [fontname=\"Helvetica\", fontsize=10];\n";
  for (const GraphNode& node : picture.nodes) {
    if (node.kind != GraphNode::Kind::note) {
      text += fmt::format("  \"{}\" [{}];\n", node.id, dot_attributes(node));
    }
  }
  const auto edge_line = [&](const GraphEdge& edge) {
    std::string attributes;
    if (edge.count > 1) attributes = fmt::format(" [label=\"×{}\"]", edge.count);
    if (edge.dashed) attributes = " [style=dashed]";
    return fmt::format("  \"{}\" -> \"{}\"{};\n", picture.nodes[edge.from].id,
                       picture.nodes[edge.to].id, attributes);
  };
  for (const GraphEdge& edge : picture.edges) {
    if (!edge.dashed) text += edge_line(edge);
  }
  for (const GraphNode& node : picture.nodes) {
    if (node.kind == GraphNode::Kind::note) {
      text += fmt::format("  \"{}\" [{}];\n", node.id, dot_attributes(node));
    }
  }
  for (const GraphEdge& edge : picture.edges) {
    if (edge.dashed) text += edge_line(edge);
  }
  return text + "}\n";
}

std::string to_dot(const Tensor& root, const DotOptions& options) {
  return dot_text(graph_picture(root, options));
}

// ---- GraphCapture -------------------------------------------------

namespace detail {

// What a live capture waits for, and what it took. (Named, not in an
// anonymous namespace: the public State types derive from it.)
struct CaptureSlot {
  DotOptions options;
  GraphPicture picture;  // guarded by captures_mutex
  bool captured = false;
};

}  // namespace detail

namespace {

using detail::CaptureSlot;

std::mutex captures_mutex;
std::vector<CaptureSlot*> captures;  // the live ones, guarded by captures_mutex

void start_capture(CaptureSlot* slot) {
  std::lock_guard<std::mutex> lock(captures_mutex);
  captures.push_back(slot);
  detail::inspect_bits.fetch_or(detail::kGraphCaptureBit, std::memory_order_relaxed);
}

void end_capture(CaptureSlot* slot) {
  std::lock_guard<std::mutex> lock(captures_mutex);
  captures.erase(std::find(captures.begin(), captures.end(), slot));
  if (captures.empty()) {
    detail::inspect_bits.fetch_and(~detail::kGraphCaptureBit, std::memory_order_relaxed);
  }
}

}  // namespace

struct GraphCapture::State : detail::CaptureSlot {};

GraphCapture::GraphCapture(const DotOptions& options) : state_(std::make_shared<State>()) {
  state_->options = options;
  start_capture(state_.get());
}

GraphCapture::~GraphCapture() { end_capture(state_.get()); }

bool GraphCapture::captured() const {
  std::lock_guard<std::mutex> lock(captures_mutex);
  return state_->captured;
}

GraphPicture GraphCapture::picture() const {
  std::lock_guard<std::mutex> lock(captures_mutex);
  return state_->picture;
}

std::string GraphCapture::text() const {
  std::lock_guard<std::mutex> lock(captures_mutex);
  return state_->captured ? dot_text(state_->picture) : std::string();
}

namespace detail {

void graph_capture_backward(const Tensor& root) {
  std::lock_guard<std::mutex> lock(captures_mutex);
  for (CaptureSlot* slot : captures) {
    if (slot->captured) continue;
    slot->picture = graph_picture(root, slot->options);
    slot->captured = true;
  }
  // Every live capture holds its picture: later passes need not call here, so
  // a capture kept for a whole run costs the run one graph walk.
  detail::inspect_bits.fetch_and(~detail::kGraphCaptureBit, std::memory_order_relaxed);
}

}  // namespace detail

}  // namespace attograd
