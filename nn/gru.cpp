// nn/gru.cpp — GRUCell and GRU on top of the fused gru_cell and gru_sequence ops.
//
// GRU runs layer by layer: layer 0 over all T steps, then layer 1 over layer
// 0's outputs, and so on. Each layer over a sequence is one gru_sequence node
// (a single step, a decoder's, one gru_cell node), so a T-step, L-layer
// forward records L nodes, plus the dropout between layers.
#include "nn/gru.hpp"

#include <cmath>

#include "autograd/ops.hpp"
#include "nn/dropout.hpp"
#include "nn/init.hpp"
#include "tensor/error.hpp"
#include "tensor/factory.hpp"

namespace attograd::nn {

namespace {

// A fresh tensor of `shape`, uniform in ±bound.
Tensor uniform_parameter(const Shape& shape, double bound, Generator& generator) {
  Tensor t = Tensor::empty(shape);
  uniform_(t, -bound, bound, generator);
  return t;
}

void check_sizes(const char* type, int64_t input_size, int64_t hidden_size) {
  check(input_size > 0 && hidden_size > 0,
        "{}: input_size ({}) and hidden_size ({}) must both be positive", type, input_size,
        hidden_size);
}

// stack(tensors, axis), except that a single tensor becomes a view with a new
// size-1 axis instead of a copy: the common T = 1 (decoder) and L = 1 cases.
Tensor stack_or_view(const std::vector<Tensor>& tensors, int64_t axis) {
  return tensors.size() == 1 ? unsqueeze(tensors.front(), axis) : stack(tensors, axis);
}

}  // namespace

// ---- GRUCell -------------------------------------------------------------------

GRUCell::GRUCell(const GRUCellOptions& options, Generator& generator)
    : Module("GRUCell"), options_(options) {
  check_sizes("GRUCell", options.input_size(), options.hidden_size());
  const int64_t I = options.input_size(), H = options.hidden_size();
  const double bound = 1.0 / std::sqrt(static_cast<double>(H));
  weight_ih = register_parameter("weight_ih", uniform_parameter({3 * H, I}, bound, generator));
  weight_hh = register_parameter("weight_hh", uniform_parameter({3 * H, H}, bound, generator));
  if (options.bias()) {
    bias_ih = register_parameter("bias_ih", uniform_parameter({3 * H}, bound, generator));
    bias_hh = register_parameter("bias_hh", uniform_parameter({3 * H}, bound, generator));
  }
}

// x: (B,I), h: (B,H) or undefined -> (B,H)
Tensor GRUCell::forward(const Tensor& x, const Tensor& h) {
  const int64_t I = options_.input_size(), H = options_.hidden_size();
  check(x.defined(), "GRUCell({}, {}): the input x is undefined", I, H);
  check(x.dim() == 2 && x.shape()[1] == I,
        "GRUCell({}, {}): x has shape {} but must be (batch,input_size) = (B,{})", I, H, x.shape(),
        I);
  const int64_t batch = x.shape()[0];
  const Tensor state = h.defined() ? h : zeros({batch, H});
  check(state.shape() == Shape{batch, H},
        "GRUCell({}, {}): h has shape {} but must be (batch,hidden_size) = {} to go with x of "
        "shape {}",
        I, H, state.shape(), Shape{batch, H}, x.shape());
  return gru_cell(x, state, weight_ih, weight_hh, bias_ih, bias_hh);
}

std::string GRUCell::extra_repr() const {
  std::string text = fmt::format("{}, {}", options_.input_size(), options_.hidden_size());
  if (!options_.bias()) text += ", bias=false";
  return text;
}

// ---- GRU -------------------------------------------------------------------------

GRU::GRU(const GRUOptions& options, Generator& generator) : Module("GRU"), options_(options) {
  check_sizes("GRU", options.input_size(), options.hidden_size());
  check(options.num_layers() >= 1, "GRU: num_layers is {}; it must be at least 1",
        options.num_layers());
  check(options.dropout() >= 0.0 && options.dropout() < 1.0,
        "GRU: dropout = {} must be in [0, 1) (the probability of zeroing an element between "
        "layers)",
        options.dropout());
  const int64_t H = options.hidden_size();
  const double bound = 1.0 / std::sqrt(static_cast<double>(H));
  // PyTorch's order: per layer weight_ih, weight_hh, bias_ih, bias_hh, which
  // is also the order the values are drawn in.
  for (int64_t k = 0; k < options.num_layers(); ++k) {
    const int64_t in = k == 0 ? options.input_size() : H;
    LayerWeights layer;
    layer.weight_ih = register_parameter(fmt::format("weight_ih_l{}", k),
                                         uniform_parameter({3 * H, in}, bound, generator));
    layer.weight_hh = register_parameter(fmt::format("weight_hh_l{}", k),
                                         uniform_parameter({3 * H, H}, bound, generator));
    if (options.bias()) {
      layer.bias_ih = register_parameter(fmt::format("bias_ih_l{}", k),
                                         uniform_parameter({3 * H}, bound, generator));
      layer.bias_hh = register_parameter(fmt::format("bias_hh_l{}", k),
                                         uniform_parameter({3 * H}, bound, generator));
    }
    layers_.push_back(layer);
  }
  dropout_generator_.seed(generator.next_u64());
}

void GRU::check_state(const Tensor& h0, int64_t batch) const {
  if (!h0.defined()) return;
  const int64_t L = options_.num_layers(), H = options_.hidden_size();
  check(h0.shape() == Shape{L, batch, H},
        "GRU: the initial state has shape {} but must be (num_layers,batch,hidden_size) = {}",
        h0.shape(), Shape{L, batch, H});
}

// x: (T,B,I), or (B,I) for one step; h0: (L,B,H) or undefined
//   -> (T,B,H) or (B,H), finals: L × (B,H)
Tensor GRU::run_layers(Tensor x, const Tensor& h0, int64_t batch, std::vector<Tensor>& finals) {
  const int64_t L = options_.num_layers(), H = options_.hidden_size();
  const bool one_step = x.dim() == 2;
  const double p = options_.dropout();
  const bool drop = is_training() && p > 0.0;
  for (int64_t k = 0; k < L; ++k) {
    const LayerWeights& w = layers_[k];
    const Tensor h = h0.defined() ? select(h0, 0, k) : Tensor();
    if (one_step) {
      // One step (a decoder's): the cell itself, so that the new state is the
      // output, with no time axis to add and take away again.
      const Tensor state = h.defined() ? h : zeros({batch, H});
      x = gru_cell(x, state, w.weight_ih, w.weight_hh, w.bias_ih, w.bias_hh);
      finals.push_back(x);
    } else {
      // The whole sequence as one node: the input's projection for all T
      // steps is one product, and backward forms each weight's gradient once.
      x = gru_sequence(x, h, w.weight_ih, w.weight_hh, w.bias_ih, w.bias_hh);
      finals.push_back(select(x, 0, x.shape()[0] - 1));  // h_n before dropout, as in PyTorch
    }
    if (drop && k + 1 < L) x = x * dropout_mask(x.shape(), p, dropout_generator_);
  }
  return x;
}

// x: (T,B,I) or (B,T,I), h0: (L,B,H) -> output (T,B,H) or (B,T,H), h_n (L,B,H)
GRUOutput GRU::forward(const Tensor& x, const Tensor& h0) {
  const int64_t I = options_.input_size();
  const bool batch_first = options_.batch_first();
  const char* expected = batch_first ? "(batch,time,input_size)" : "(time,batch,input_size)";
  check(x.defined(), "GRU: the input x is undefined");
  check(x.dim() == 3,
        "GRU: x has shape {} but must be 3-D, {} with input_size = {} (for one step without a "
        "time axis use GRU::step)",
        x.shape(), expected, I);
  check(x.shape()[2] == I,
        "GRU: layer 0 takes inputs of size input_size = {}, so x must be {} = (·,·,{}); got "
        "shape {}",
        I, expected, I, x.shape());
  const int64_t time_axis = batch_first ? 1 : 0;
  const int64_t T = x.shape()[time_axis];
  const int64_t batch = x.shape()[1 - time_axis];
  check(T > 0, "GRU: x has shape {}, an empty sequence (T = 0); give at least one step", x.shape());
  check_state(h0, batch);

  std::vector<Tensor> finals;
  if (T == 1) {  // one step: the cells, then the time axis put back
    const Tensor top = run_layers(select(x, time_axis, 0), h0, batch, finals);
    return {unsqueeze(top, time_axis), stack_or_view(finals, 0)};
  }
  const Tensor output = run_layers(batch_first ? transpose(x, 0, 1) : x, h0, batch, finals);
  return {batch_first ? transpose(output, 0, 1) : output, stack_or_view(finals, 0)};
}

// x: (B,I), h: (L,B,H) -> output (B,H), h_n (L,B,H)
GRUOutput GRU::step(const Tensor& x, const Tensor& h) {
  const int64_t I = options_.input_size();
  check(x.defined(), "GRU::step: the input x is undefined");
  check(x.dim() == 2 && x.shape()[1] == I,
        "GRU::step: layer 0 takes inputs of size input_size = {}, so x must be (batch,{}); got "
        "shape {}",
        I, I, x.shape());
  const int64_t batch = x.shape()[0];
  check_state(h, batch);
  std::vector<Tensor> finals;
  const Tensor output = run_layers(x, h, batch, finals);
  return {output, stack_or_view(finals, 0)};
}

std::string GRU::extra_repr() const {
  std::string text = fmt::format("{}, {}", options_.input_size(), options_.hidden_size());
  if (options_.num_layers() != 1) text += fmt::format(", num_layers={}", options_.num_layers());
  if (!options_.bias()) text += ", bias=false";
  if (options_.batch_first()) text += ", batch_first=true";
  if (options_.dropout() != 0.0) text += fmt::format(", dropout={}", options_.dropout());
  return text;
}

}  // namespace attograd::nn
