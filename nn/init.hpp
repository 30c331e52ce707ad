// nn/init.hpp — filling a parameter with starting values.
//
// Each function overwrites the values of `tensor` in place (through its view,
// so a slice of a larger parameter can be initialised on its own) and keeps
// the tensor's identity: a registered parameter stays registered, and its
// requires_grad flag is untouched. Nothing is recorded in the autograd graph.
// Values are drawn in row-major order from `generator`, so a fixed seed gives
// the same parameters on every machine (see tensor/random.hpp).
#pragma once

#include <cstdint>

#include "tensor/random.hpp"
#include "tensor/tensor.hpp"

namespace attograd::nn {

// Every value drawn from U[low, high).
void uniform_(Tensor& tensor, double low, double high, Generator& generator = default_generator());
// Every value drawn from N(mean, stddev²).
void normal_(Tensor& tensor, double mean, double stddev,
             Generator& generator = default_generator());
// Every value set to `value`.
void constant_(Tensor& tensor, double value);
void zeros_(Tensor& tensor);
void ones_(Tensor& tensor);

// The fans PyTorch uses for a weight of shape (out, in, k1, k2, …):
// fan_in = in · k1·k2·…, fan_out = out · k1·k2·…. For a Linear weight (out, in)
// that is simply in and out. Needs at least 2 dims.
struct Fans {
  int64_t fan_in = 0;
  int64_t fan_out = 0;
};
Fans compute_fans(const Tensor& tensor);

// Glorot & Bengio (2010): U[−a, a] with a = gain · √(6 / (fan_in + fan_out)),
// which keeps the variance of activations and of gradients about equal from
// layer to layer.
void xavier_uniform_(Tensor& tensor, double gain = 1.0, Generator& generator = default_generator());
// The same variance from a normal: N(0, σ²) with σ = gain · √(2 / (fan_in + fan_out)).
void xavier_normal_(Tensor& tensor, double gain = 1.0, Generator& generator = default_generator());

}  // namespace attograd::nn
