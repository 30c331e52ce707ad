// autograd/fast/sentence_products.hpp — a sentence's known inputs multiplied
// by their weights once, not once per step.
//
// A decoder step t applies a layer to [a_t; b_t], where a_t is the word it
// is fed and b_t something the previous steps computed. Under teacher forcing
// every a_t is known before the first step, so a_t's block of the weight can
// take all T of them in one product (KnownInputsLinear, autograd/ops_linear.hpp):
// the block is read once per sentence instead of once per word, forward and
// backward. Each step then takes only b_t through the other block. The sums
// are linear's in another order, so the results agree to float rounding.
//
// What it saves: 3.5 % of a teacher-forced iteration of the tutorial's
// recipe (the "without sentence products" row of `build/bench/bench_seq2seq`,
// median of three runs; docs/fast_paths.md).
// Switch: fast::set_sentence_products(false), or a fast::ReferencePath guard
// (autograd/fast/fast.hpp); KnownInputsLinear then takes each step through
// the whole layer, linear(cat({a_t, b_t}, 1), W, bias).
// Under create_graph it needs no fallback: both halves are linear_columns
// nodes, whose backward records when the backward pass does.
#pragma once

#include <cstdint>
#include <vector>

#include "tensor/tensor.hpp"

namespace attograd::fast {

// Whether KnownInputsLinear forms its known inputs' products for a whole sentence at
// once (on by default). Per thread.
bool sentence_products();
void set_sentence_products(bool on);

namespace detail {

// KnownInputsLinear's two halves (its gradients are linear_columns').
// The sentence's product: known, T tensors a_t of (1,n_a); weight
// (out,n_a+n_b); bias (out) or undefined -> P = A W[:, :n_a]ᵀ + bias (T,out),
// or an undefined tensor when the switch is off (or T = 0): then each step
// goes through the whole layer.
Tensor sentence_product(const std::vector<Tensor>& known, const Tensor& weight, const Tensor& bias);
// Step t of it: b (1,n_b) -> b W[:, n_a:]ᵀ + P[t] (1,out).
Tensor sentence_step(const Tensor& product, int64_t t, const Tensor& b, const Tensor& weight,
                     int64_t n_a);

}  // namespace detail

}  // namespace attograd::fast
