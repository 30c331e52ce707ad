#include "nn/module.hpp"

#include <algorithm>

#include "tensor/error.hpp"

namespace attograd::nn {

namespace {

void check_name(const std::string& kind, const std::string& name) {
  check(!name.empty() && name.find('.') == std::string::npos,
        "register_{}: name '{}' must be non-empty and contain no '.' (dots join nested names)",
        kind, name);
}

}  // namespace

Tensor Module::register_parameter(const std::string& name, Tensor tensor) {
  check_name("parameter", name);
  check(tensor.defined(), "register_parameter: '{}' is an undefined tensor", name);
  for (const auto& [existing, _] : parameters_) {
    check(existing != name, "register_parameter: {} already has a parameter '{}'", type_name_,
          name);
  }
  requires_grad_(tensor);
  parameters_.emplace_back(name, tensor);
  return tensor;
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> module) {
  check_name("module", name);
  check(module != nullptr, "register_module: '{}' is null", name);
  for (const auto& [existing, _] : children_) {
    check(existing != name, "register_module: {} already has a child '{}'", type_name_, name);
  }
  module->train(training_);
  children_.emplace_back(name, std::move(module));
}

void Module::collect(const std::string& prefix,
                     std::vector<std::pair<std::string, Tensor>>& out) const {
  for (const auto& [name, tensor] : parameters_) out.emplace_back(prefix + name, tensor);
  for (const auto& [name, child] : children_) child->collect(prefix + name + ".", out);
}

std::vector<std::pair<std::string, Tensor>> Module::named_parameters() const {
  std::vector<std::pair<std::string, Tensor>> out;
  collect("", out);
  return out;
}

std::vector<Tensor> Module::parameters() const {
  std::vector<Tensor> out;
  for (auto& [name, tensor] : named_parameters()) out.push_back(tensor);
  return out;
}

Tensor Module::parameter(const std::string& name) const {
  std::string known;
  for (const auto& [candidate, tensor] : named_parameters()) {
    if (candidate == name) return tensor;
    if (!known.empty()) known += ", ";
    known += candidate;
  }
  fail("{}: no parameter named '{}' (it has: {})", type_name_, name, known);
}

int64_t Module::parameter_count() const {
  int64_t total = 0;
  for (const Tensor& t : parameters()) total += t.numel();
  return total;
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [name, child] : children_) child->train(on);
}

void Module::zero_grad() {
  for (const Tensor& t : parameters()) attograd::zero_grad(t);
}

void Module::append_summary(std::string& out, int indent) const {
  out += fmt::format("{}({}", type_name_, extra_repr());
  if (children_.empty()) {
    out += ")";
    return;
  }
  for (const auto& [name, child] : children_) {
    out += fmt::format("\n{:{}}({}): ", "", indent + 2, name);
    child->append_summary(out, indent + 2);
  }
  out += fmt::format("\n{:{}})", "", indent);
}

std::string Module::summary() const {
  std::string out;
  append_summary(out, 0);
  return out;
}

}  // namespace attograd::nn
