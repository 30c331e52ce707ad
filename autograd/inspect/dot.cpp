// autograd/inspect/dot.cpp — walking a graph into DOT text.
//
// Three passes over the tensors below the root: find them (breadth first, so
// the nearest to the root come first and survive a node cap), give each op a
// module when boxes are asked for (inputs before users, without recursion),
// then draw what is left after boxing and capping.
#include "autograd/inspect/dot.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <map>
#include <mutex>
#include <unordered_map>

#include "autograd/engine.hpp"
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

std::string escape(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

std::string values_line(const char* what, const Tensor& t, int64_t limit) {
  const std::vector<real> values = t.to_vector();
  std::string line = fmt::format("\\n{} [", what);
  for (size_t i = 0; i < values.size() && static_cast<int64_t>(i) < limit; ++i) {
    line += fmt::format("{}{:.4g}", i == 0 ? "" : " ", values[i]);
  }
  return line + (static_cast<int64_t>(values.size()) > limit ? " …]" : "]");
}

std::string tensor_label(const GraphTensor& t, const std::string& leaf_name,
                         const DotOptions& options) {
  const Tensor tensor(t.impl);
  std::string label;
  if (t.node != nullptr) {
    label = escape(t.node->name);
  } else {
    label = leaf_name.empty() ? (requires_grad(tensor) ? "leaf" : "constant") : escape(leaf_name);
  }
  label += fmt::format("\\n{}", tensor.shape());
  if (t.node == nullptr && requires_grad(tensor)) label += "\\nrequires_grad";
  if (options.show_values()) {
    label += values_line("data", tensor, options.show_values_limit());
    const Tensor gradient = grad(tensor);
    if (gradient.defined()) label += values_line("grad", gradient, options.show_values_limit());
  }
  return label;
}

// What is drawn: nodes (tensors, or module boxes) and counted edges.
struct Picture {
  std::vector<std::string> ids;  // in order of distance from the root
  std::map<std::string, std::string> attributes;
  std::vector<std::pair<std::string, std::string>> edges;  // in first-seen order
  std::map<std::pair<std::string, std::string>, int> edge_count;
};

void add_edge(Picture& picture, const std::string& from, const std::string& to) {
  if (from == to) return;
  if (picture.edge_count[{from, to}]++ == 0) picture.edges.push_back({from, to});
}

Picture draw(const std::vector<GraphTensor>& tensors, const std::vector<std::string>& leaf_names,
             const std::vector<std::string>& module, const DotOptions& options) {
  Picture picture;
  struct Box {
    std::string id;
    int ops = 0;
    int leaves = 0;
  };
  std::map<std::string, Box> boxes;  // by module name
  std::vector<std::string> id(tensors.size());
  for (size_t t = 0; t < tensors.size(); ++t) {
    if (!module[t].empty()) {
      const auto [box, added] = boxes.try_emplace(module[t]);
      if (added) {
        box->second.id = fmt::format("module{}", boxes.size() - 1);
        picture.ids.push_back(box->second.id);
      }
      ++(tensors[t].node != nullptr ? box->second.ops : box->second.leaves);
      id[t] = box->second.id;
      continue;
    }
    id[t] = fmt::format("t{}", t);
    picture.ids.push_back(id[t]);
    picture.attributes[id[t]] =
        fmt::format("shape={}, label=\"{}\"{}", tensors[t].node != nullptr ? "box" : "ellipse",
                    tensor_label(tensors[t], leaf_names[t], options), t == 0 ? ", penwidth=2" : "");
  }
  for (const auto& [name, box] : boxes) {
    picture.attributes[box.id] = fmt::format(
        "shape=box3d, style=filled, fillcolor=lightgrey, label=\"{}\\n{} ops, {} parameters\"",
        escape(name), box.ops, box.leaves);
  }
  for (size_t t = 0; t < tensors.size(); ++t) {
    for (const size_t input : tensors[t].inputs) add_edge(picture, id[input], id[t]);
  }
  return picture;
}

std::string render(const Picture& picture, int64_t max_nodes) {
  const size_t kept =
      max_nodes > 0 ? std::min<size_t>(picture.ids.size(), max_nodes) : picture.ids.size();
  std::map<std::string, bool> shown;
  for (size_t i = 0; i < kept; ++i) shown[picture.ids[i]] = true;
  std::string text =
      "digraph attograd {\n  rankdir=LR;\n  node [fontname=\"Helvetica\", fontsize=10];\n";
  for (size_t i = 0; i < kept; ++i) {
    text += fmt::format("  \"{}\" [{}];\n", picture.ids[i], picture.attributes.at(picture.ids[i]));
  }
  std::vector<std::string> cut;  // shown nodes with an input left out
  for (const auto& [from, to] : picture.edges) {
    if (!shown.count(to)) continue;
    if (!shown.count(from)) {
      if (std::find(cut.begin(), cut.end(), to) == cut.end()) cut.push_back(to);
      continue;
    }
    const int count = picture.edge_count.at({from, to});
    text += fmt::format("  \"{}\" -> \"{}\"{};\n", from, to,
                        count > 1 ? fmt::format(" [label=\"×{}\"]", count) : std::string());
  }
  if (kept < picture.ids.size()) {
    text += fmt::format(
        "  \"omitted\" [shape=note, label=\"{} more nodes not drawn\\n(max_nodes = {})\"];\n",
        picture.ids.size() - kept, max_nodes);
    for (const std::string& to : cut)
      text += fmt::format("  \"omitted\" -> \"{}\" [style=dashed];\n", to);
  }
  return text + "}\n";
}

}  // namespace

std::string to_dot(const Tensor& root, const DotOptions& options) {
  check(root.defined(), "to_dot: got an undefined tensor (default-constructed Tensor)");
  check(options.max_nodes() >= 0, "to_dot: max_nodes is {}; it must be 0 (no limit) or more",
        options.max_nodes());
  const std::vector<GraphTensor> tensors = collect(root);
  std::unordered_map<const TensorImpl*, std::string> name_of;
  for (const auto& [name, tensor] : options.names()) {
    if (tensor.defined()) name_of.emplace(tensor.impl_ptr().get(), name);
  }
  std::vector<std::string> leaf_names(tensors.size());
  for (size_t t = 0; t < tensors.size(); ++t) {
    const auto found = name_of.find(tensors[t].impl.get());
    if (found != name_of.end() && tensors[t].node == nullptr) leaf_names[t] = found->second;
  }
  const std::vector<std::string> module =
      options.collapse_depth() > 0 ? modules_of(tensors, leaf_names, options.collapse_depth())
                                   : std::vector<std::string>(tensors.size());
  return render(draw(tensors, leaf_names, module, options), options.max_nodes());
}

// ---- DotCapture ---------------------------------------------------------------

struct DotCapture::State {
  DotOptions options;
  std::string text;  // guarded by captures_mutex
  bool captured = false;
};

namespace {

std::mutex captures_mutex;
std::vector<DotCapture::State*> captures;  // the live ones, guarded by captures_mutex

}  // namespace

DotCapture::DotCapture(DotOptions options) : state_(std::make_shared<State>()) {
  state_->options = std::move(options);
  std::lock_guard<std::mutex> lock(captures_mutex);
  captures.push_back(state_.get());
  detail::inspect_bits.fetch_or(detail::kDotCaptureBit, std::memory_order_relaxed);
}

DotCapture::~DotCapture() {
  std::lock_guard<std::mutex> lock(captures_mutex);
  captures.erase(std::find(captures.begin(), captures.end(), state_.get()));
  if (captures.empty()) {
    detail::inspect_bits.fetch_and(~detail::kDotCaptureBit, std::memory_order_relaxed);
  }
}

bool DotCapture::captured() const {
  std::lock_guard<std::mutex> lock(captures_mutex);
  return state_->captured;
}

std::string DotCapture::text() const {
  std::lock_guard<std::mutex> lock(captures_mutex);
  return state_->text;
}

namespace detail {

void dot_capture_backward(const Tensor& root) {
  std::lock_guard<std::mutex> lock(captures_mutex);
  for (DotCapture::State* state : captures) {
    if (state->captured) continue;
    state->text = to_dot(root, state->options);
    state->captured = true;
  }
}

}  // namespace detail

}  // namespace attograd
