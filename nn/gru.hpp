// nn/gru.hpp — gated recurrent units (Cho et al., 2014): GRUCell, one step,
// and GRU, a stack of layers run over a whole sequence.
//
// Letters: T time steps, B batch, I input size, H hidden size, L layers.
//
//   nn::GRU gru(nn::GRUOptions(/*input*/ 5, /*hidden*/ 7).num_layers(2));
//   nn::GRUOutput out = gru.forward(x);      // x: (T,B,5)
//   out.output;                              // (T,B,7): the top layer at every step
//   out.h_n;                                 // (2,B,7): the last state of each layer
//
// One step, per layer, with gates stacked r, z, n as PyTorch stacks them:
//   r  = σ(W_ir x + b_ir + W_hr h + b_hr)          reset gate
//   z  = σ(W_iz x + b_iz + W_hz h + b_hz)          update gate
//   n  = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn))  candidate state
//   h' = (1 − z) ⊙ n + z ⊙ h
// Each step is one fused graph node, gru_cell (autograd/ops_gru.cpp); docs/gru.md
// has the derivation of its backward. forward() over a whole sequence runs
// each layer as one gru_sequence node, which projects every step's input at
// once, X W_ihᵀ + b_ih as one (T·B,I) @ (I,3H) product.
//
// Parameters have PyTorch's names and layouts, so state dicts carry over
// unchanged: GRUCell has weight_ih (3H,I), weight_hh (3H,H), bias_ih (3H),
// bias_hh (3H); GRU has the same per layer k with the suffix _l{k}, and
// layer k > 0 takes the H outputs of layer k − 1 as its input. Every value
// starts uniform in ±1/√H.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "autograd/ops_gru.hpp"
#include "nn/module.hpp"
#include "tensor/random.hpp"

namespace attograd::nn {

struct GRUCellOptions {
  GRUCellOptions(int64_t input_size, int64_t hidden_size)
      : input_size_(input_size), hidden_size_(hidden_size) {}
  // Whether to learn bias_ih and bias_hh (default true). Without them the
  // gates see only the two matrix products.
  GRUCellOptions& bias(bool on) {
    bias_ = on;
    return *this;
  }

  int64_t input_size() const { return input_size_; }
  int64_t hidden_size() const { return hidden_size_; }
  bool bias() const { return bias_; }

 private:
  int64_t input_size_;
  int64_t hidden_size_;
  bool bias_ = true;
};

class GRUCell : public Module {
 public:
  explicit GRUCell(const GRUCellOptions& options, Generator& generator = default_generator());

  // x: (B,I), h: (B,H) -> h': (B,H). An undefined h starts from zeros.
  Tensor forward(const Tensor& x, const Tensor& h = Tensor());

  const GRUCellOptions& options() const { return options_; }

  Tensor weight_ih;  // (3H,I): [W_ir; W_iz; W_in]
  Tensor weight_hh;  // (3H,H): [W_hr; W_hz; W_hn]
  Tensor bias_ih;    // (3H), undefined when options.bias(false)
  Tensor bias_hh;    // (3H), undefined when options.bias(false)

 protected:
  std::string extra_repr() const override;

 private:
  GRUCellOptions options_;
};

struct GRUOptions {
  GRUOptions(int64_t input_size, int64_t hidden_size)
      : input_size_(input_size), hidden_size_(hidden_size) {}
  // Stacked layers (default 1).
  GRUOptions& num_layers(int64_t layers) {
    num_layers_ = layers;
    return *this;
  }
  // Inverted-dropout probability on the outputs of every layer but the last,
  // in training mode only (default 0). It does nothing with one layer.
  GRUOptions& dropout(double p) {
    dropout_ = p;
    return *this;
  }
  // Inputs and outputs are (B,T,·) instead of (T,B,·) (default false). The
  // state h0 / h_n stays (L,B,H) either way, as in PyTorch.
  GRUOptions& batch_first(bool on) {
    batch_first_ = on;
    return *this;
  }
  // Whether every layer learns bias_ih and bias_hh (default true).
  GRUOptions& bias(bool on) {
    bias_ = on;
    return *this;
  }

  int64_t input_size() const { return input_size_; }
  int64_t hidden_size() const { return hidden_size_; }
  int64_t num_layers() const { return num_layers_; }
  double dropout() const { return dropout_; }
  bool batch_first() const { return batch_first_; }
  bool bias() const { return bias_; }

 private:
  int64_t input_size_;
  int64_t hidden_size_;
  int64_t num_layers_ = 1;
  double dropout_ = 0.0;
  bool batch_first_ = false;
  bool bias_ = true;
};

struct GRUOutput {
  Tensor output;  // forward: (T,B,H), or (B,T,H) if batch_first — the top layer at every step.
                  // step: (B,H) — the top layer's new state.
  Tensor h_n;     // (L,B,H): the final state of every layer
};

class GRU : public Module {
 public:
  // Dropout masks come from a Generator of the GRU's own, seeded with one draw
  // from `generator` after the parameters (as nn::Dropout does).
  explicit GRU(const GRUOptions& options, Generator& generator = default_generator());

  // x: (T,B,I) (or (B,T,I) if batch_first), h0: (L,B,H) or undefined for zeros
  //   -> output (T,B,H) (or (B,T,H)), h_n (L,B,H)
  GRUOutput forward(const Tensor& x, const Tensor& h0 = Tensor());

  // One time step through all layers, for decoders that feed each output back
  // in: x: (B,I), h: (L,B,H) or undefined for zeros -> output (B,H), h_n (L,B,H).
  // Equal to forward() on a length-1 sequence, without the time axis; with one
  // layer h_n is a view of output, so a step copies nothing beyond the cell's work.
  GRUOutput step(const Tensor& x, const Tensor& h = Tensor());

  const GRUOptions& options() const { return options_; }
  Generator& dropout_generator() { return dropout_generator_; }

  // Layer k's parameters, also registered as weight_ih_l{k}, weight_hh_l{k},
  // bias_ih_l{k}, bias_hh_l{k} (biases undefined when options.bias(false)).
  struct LayerWeights {
    Tensor weight_ih;  // (3H,I) for layer 0, (3H,H) above it
    Tensor weight_hh;  // (3H,H)
    Tensor bias_ih;    // (3H)
    Tensor bias_hh;    // (3H)
  };
  const std::vector<LayerWeights>& layers() const { return layers_; }

 protected:
  std::string extra_repr() const override;

 private:
  // x: (T,B,I) with T ≥ 2, or (B,I) for one step without the time axis; h0:
  // (L,B,H) or undefined. Returns the top layer's outputs, (T,B,H) or (B,H),
  // and fills `finals` with each layer's last state (B,H).
  Tensor run_layers(Tensor x, const Tensor& h0, int64_t batch, std::vector<Tensor>& finals);
  void check_state(const Tensor& h0, int64_t batch) const;

  GRUOptions options_;
  std::vector<LayerWeights> layers_;
  Generator dropout_generator_;
};

}  // namespace attograd::nn
