// nn/module.hpp — the base class every layer and model derives from.
//
// A Module owns named parameters and named child modules, registered in its
// constructor the way PyTorch's C++ front end does it:
//
//   struct TwoLayer : nn::Module {
//     std::shared_ptr<nn::Linear> hidden, out;
//     TwoLayer() : nn::Module("TwoLayer") {
//       hidden = register_module("hidden", std::make_shared<nn::Linear>(nn::LinearOptions(2, 8)));
//       out = register_module("out", std::make_shared<nn::Linear>(nn::LinearOptions(8, 1)));
//     }
//     Tensor forward(const Tensor& x) { return out->forward(relu(hidden->forward(x))); }
//   };
//
// named_parameters() then yields "hidden.weight", "hidden.bias", "out.weight",
// "out.bias" in registration order — the names a checkpoint is keyed by, and
// the same names PyTorch would give, so weights can be compared or exchanged.
// Each layer has its own forward(...) with the arguments it needs; there is
// no virtual forward.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "autograd/engine.hpp"
#include "tensor/tensor.hpp"

namespace attograd::nn {

class Module {
 public:
  explicit Module(std::string type_name) : type_name_(std::move(type_name)) {}
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // Every parameter of this module and its descendants, with dotted names,
  // depth first in registration order.
  std::vector<std::pair<std::string, Tensor>> named_parameters() const;
  std::vector<Tensor> parameters() const;
  // The parameter called `name` (dotted); throws naming the known ones if absent.
  Tensor parameter(const std::string& name) const;
  const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& children() const {
    return children_;
  }
  int64_t parameter_count() const;  // total number of scalars

  // Training mode (dropout active) or evaluation mode; applies to all children.
  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

  // Forget every parameter's gradient.
  void zero_grad();

  const std::string& type_name() const { return type_name_; }
  // A tree in the style of PyTorch's module print:
  //   Seq2Seq(
  //     (encoder): EncoderRNN(
  //       (embedding): Embedding(4345, 256)
  //   …
  std::string summary() const;

 protected:
  // Register a tensor as a trainable parameter (sets requires_grad) and return it.
  Tensor register_parameter(const std::string& name, Tensor tensor);
  template <typename M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    add_child(name, module);
    return module;
  }
  // What goes inside the parentheses of this module's line in summary(),
  // e.g. "in_features=256, out_features=10, bias=true".
  virtual std::string extra_repr() const { return ""; }

 private:
  void add_child(const std::string& name, std::shared_ptr<Module> module);
  void collect(const std::string& prefix, std::vector<std::pair<std::string, Tensor>>& out) const;
  void append_summary(std::string& out, int indent) const;

  std::string type_name_;
  bool training_ = true;
  std::vector<std::pair<std::string, Tensor>> parameters_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
};

// Puts a module (and its children) in evaluation mode for one scope and
// restores the mode it had when the scope ends, so a model can translate or
// predict in the middle of training without switching dropout back on by hand:
//
//   { const nn::EvalModeGuard eval_mode(model); model.translate(source); }
class EvalModeGuard {
 public:
  explicit EvalModeGuard(Module& module) : module_(module), was_training_(module.is_training()) {
    module_.eval();
  }
  ~EvalModeGuard() { module_.train(was_training_); }
  EvalModeGuard(const EvalModeGuard&) = delete;
  EvalModeGuard& operator=(const EvalModeGuard&) = delete;

 private:
  Module& module_;
  bool was_training_;
};

}  // namespace attograd::nn
