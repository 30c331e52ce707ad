// autograd/fast/fused.hpp — ops that record, as one node, what the
// reference path records as several.
//
// The op attention_pool (autograd/ops.hpp) is softmax over the keys followed
// by the weighted sum of the values, bmm(softmax(scores ⊙ scale, 2), values):
// the heart of attention pooling (the seed text on Nadaraya–Watson kernel
// regression). Recorded as those ops it costs several nodes, the weights'
// gradient dα = dy @ valuesᵀ as a tensor of its own, and passes over memory
// for each; fused, a row's scores, weights and values stay in registers from
// one load to one store (tensor/kernels_attention.cpp), and its backward
// needs no dα at all, since Σ_k α_k dα_k = dy · out.
//
// What it saves: NW's 100 epochs take 310 µs with pooling off and 533 µs on
// the reference path, which also turns this off — nearly all of that
// difference is this op (`build/bench/bench_nw_regression 201 --rounds 3`;
// docs/fast_paths.md).
// Switch: fast::set_fused_ops(false), or a fast::ReferencePath guard
// (autograd/fast/fast.hpp); attention_pool then records mul, softmax and bmm,
// its composed twin, which is also what tests/autograd/test_fast_paths.cpp
// compares it with.
// Under create_graph: a backward pass that records takes the gradients of
// that composed twin (composed_gradients, autograd/op_helpers.hpp), with the
// inputs as given, so they can be differentiated again; the kernel's
// gradients are the same numbers to float rounding
// (tests/autograd/test_higher_order_fused.cpp).
#pragma once

#include "tensor/tensor.hpp"

namespace attograd::fast {

// Whether attention_pool records one fused node (on by default). Per thread.
bool fused_ops();
void set_fused_ops(bool on);

namespace detail {

// attention_pool's fused node, which the op calls while fused_ops() is on;
// the op has checked the shapes.
// scores: (B,Tq,Tk), values: (B,Tk,dv), scale: undefined, one number or (Tk) -> (B,Tq,dv).
//   z = scores ⊙ scale          α = softmax(z, 2)          out = bmm(α, values)
//   dz = α ⊙ (dα − Σ_k α dα) with dα = dy @ valuesᵀ (Σ_k α dα = dy · out per row)
//   dscores = dz ⊙ scale        dscale = Σ dz ⊙ scores (summed to scale's shape)
//   dvalues = αᵀ @ dy
// The scaled scores are never a tensor: they are formed in registers, and
// when `scores` needs no gradient (a constant, as Nadaraya–Watson's
// distances are) neither is dz. The fused and the composed forms agree to
// float rounding: the sums are taken in different orders
// (tests/autograd/test_fast_paths.cpp states the tolerance).
Tensor fused_attention_pool(const Tensor& scores, const Tensor& values, const Tensor& scale,
                            Tensor* weights);

}  // namespace detail

}  // namespace attograd::fast
