// tensor/kernels_gru.hpp — the pointwise part of one GRU step, fused.
//
// A GRU step is two matrix products and then a dozen elementwise operations
// on the gate pre-activations. The products go through kernels::matmul_forward;
// these two kernels do everything elementwise in one pass over memory, forward
// and backward, instead of a dozen passes (and a dozen graph nodes).
//
// Letters: B batch, H hidden size. The gate pre-activations come stacked in
// PyTorch's order r, z, n along the last axis of width 3H:
//   gi = x W_ihᵀ + b_ih   (B,3H) = [gi_r | gi_z | gi_n]
//   gh = h W_hhᵀ + b_hh   (B,3H) = [gh_r | gh_z | gh_n]
//
// Same conventions as tensor/kernels.hpp: outputs first, then inputs, then
// sizes; `d` marks a gradient; `kernels::scalar::` is the plain-loop
// specification and `kernels::` the xsimd version tested against it
// (tests/tensor/test_kernels_gru.cpp).
#pragma once

#include <cstdint>

#include "tensor/shape.hpp"

namespace attograd::kernels {

namespace scalar {
void gru_gates_forward(real* h_new, real* r, real* z, real* n, real* gh_n, const real* gi,
                       const real* gh, const real* h, int64_t B, int64_t H);
void gru_gates_backward(real* dgi, real* dgh, real* dh_direct, const real* dh_new, const real* r,
                        const real* z, const real* n, const real* gh_n, const real* h, int64_t B,
                        int64_t H);
}  // namespace scalar

#if ATTOGRAD_USE_SIMD  // without it, kernels::f is scalar::f (tensor/kernels.hpp)
// h_new, r, z, n, gh_n, h: (B,H); gi, gh: (B,3H).
//   r    = σ(gi_r + gh_r)
//   z    = σ(gi_z + gh_z)
//   gh_n = the n block of gh, W_hn h + b_hn (saved: backward needs it)
//   n    = tanh(gi_n + r ⊙ gh_n)
//   h'   = (1 − z) ⊙ n + z ⊙ h
void gru_gates_forward(real* h_new, real* r, real* z, real* n, real* gh_n, const real* gi,
                       const real* gh, const real* h, int64_t B, int64_t H);

// dgi, dgh: (B,3H); dh_direct, dh_new, r, z, n, gh_n, h: (B,H).
// Given dh' = dL/dh', the gradients of the pre-activations gi and gh, and the
// part of dL/dh that does not pass through W_hh (see autograd/ops_gru.cpp for
// the derivation):
//   dn   = dh' ⊙ (1 − z)             da_n = dn ⊙ (1 − n²)
//   dz   = dh' ⊙ (h − n)             da_z = dz ⊙ z ⊙ (1 − z)
//   dr   = da_n ⊙ gh_n               da_r = dr ⊙ r ⊙ (1 − r)
//   dgi  = [da_r | da_z | da_n]
//   dgh  = [da_r | da_z | da_n ⊙ r]
//   dh_direct = dh' ⊙ z
// All outputs are written, not accumulated.
void gru_gates_backward(real* dgi, real* dgh, real* dh_direct, const real* dh_new, const real* r,
                        const real* z, const real* n, const real* gh_n, const real* h, int64_t B,
                        int64_t H);
#endif

}  // namespace attograd::kernels
