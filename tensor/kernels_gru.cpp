// tensor/kernels_gru.cpp — the fused GRU gate kernels: the scalar
// specification first, then the xsimd version that must agree with it.
#include "tensor/kernels_gru.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include "tensor/kernels_simd.hpp"

namespace attograd::kernels {

namespace scalar {

namespace {
real sigmoid(real x) { return real(1) / (real(1) + std::exp(-x)); }
}  // namespace

void gru_gates_forward(real* h_new, real* r, real* z, real* n, real* gh_n, const real* gi,
                       const real* gh, const real* h, int64_t B, int64_t H) {
  for (int64_t b = 0; b < B; ++b) {
    const real* gi_row = gi + b * 3 * H;  // [gi_r | gi_z | gi_n]
    const real* gh_row = gh + b * 3 * H;  // [gh_r | gh_z | gh_n]
    for (int64_t j = 0; j < H; ++j) {
      const int64_t i = b * H + j;
      r[i] = sigmoid(gi_row[j] + gh_row[j]);
      z[i] = sigmoid(gi_row[H + j] + gh_row[H + j]);
      gh_n[i] = gh_row[2 * H + j];
      n[i] = std::tanh(gi_row[2 * H + j] + r[i] * gh_n[i]);
      h_new[i] = (real(1) - z[i]) * n[i] + z[i] * h[i];
    }
  }
}

void gru_gates_backward(real* dgi, real* dgh, real* dh_direct, const real* dh_new, const real* r,
                        const real* z, const real* n, const real* gh_n, const real* h, int64_t B,
                        int64_t H) {
  for (int64_t b = 0; b < B; ++b) {
    real* dgi_row = dgi + b * 3 * H;
    real* dgh_row = dgh + b * 3 * H;
    for (int64_t j = 0; j < H; ++j) {
      const int64_t i = b * H + j;
      const real dn = dh_new[i] * (real(1) - z[i]);  // h' = (1 − z) n + z h
      const real dz = dh_new[i] * (h[i] - n[i]);
      const real da_n = dn * (real(1) - n[i] * n[i]);  // n = tanh(a_n)
      const real da_z = dz * z[i] * (real(1) - z[i]);  // z = σ(a_z)
      const real dr = da_n * gh_n[i];                  // a_n = gi_n + r gh_n
      const real da_r = dr * r[i] * (real(1) - r[i]);  // r = σ(a_r)
      dgi_row[j] = da_r;
      dgi_row[H + j] = da_z;
      dgi_row[2 * H + j] = da_n;
      dgh_row[j] = da_r;
      dgh_row[H + j] = da_z;
      dgh_row[2 * H + j] = da_n * r[i];
      dh_direct[i] = dh_new[i] * z[i];
    }
  }
}

}  // namespace scalar

#if ATTOGRAD_USE_SIMD

using namespace simd;

namespace {

// A run of `count` (≤ W) consecutive elements starting at `start`. A full run
// loads and stores straight from memory; the last, short run of a row goes
// through a zero-padded buffer, so the tail needs no second implementation
// (σ(0) and tanh(0) are finite, and padded lanes are never stored).
struct Lanes {
  int64_t start;
  int64_t count;

  Batch load(const real* p) const {
    if (count == W) return Batch::load_unaligned(p + start);
    alignas(64) std::array<real, W> buffer{};
    std::copy_n(p + start, count, buffer.begin());
    return Batch::load_aligned(buffer.data());
  }
  void store(real* p, Batch value) const {
    if (count == W) {
      value.store_unaligned(p + start);
      return;
    }
    alignas(64) std::array<real, W> buffer;
    value.store_aligned(buffer.data());
    std::copy_n(buffer.begin(), count, p + start);
  }
};

// Calls body(lanes) for the runs of W elements (and one shorter run) covering [0, n).
template <typename Body>
void over_lanes(int64_t n, Body&& body) {
  for (int64_t i = 0; i < n; i += W) body(Lanes{i, std::min(W, n - i)});
}

}  // namespace

void gru_gates_forward(real* h_new, real* r, real* z, real* n, real* gh_n, const real* gi,
                       const real* gh, const real* h, int64_t B, int64_t H) {
  const Batch one(real(1));
  for (int64_t b = 0; b < B; ++b) {
    const real* gi_r = gi + b * 3 * H;
    const real* gi_z = gi_r + H;
    const real* gi_n = gi_r + 2 * H;
    const real* gh_r = gh + b * 3 * H;
    const real* gh_z = gh_r + H;
    const real* gh_n_in = gh_r + 2 * H;
    const int64_t row = b * H;
    over_lanes(H, [&](const Lanes& lanes) {
      const Batch reset = sigmoid(lanes.load(gi_r) + lanes.load(gh_r));
      const Batch update = sigmoid(lanes.load(gi_z) + lanes.load(gh_z));
      const Batch hidden_n = lanes.load(gh_n_in);
      const Batch candidate = xsimd::tanh(simd::fma(reset, hidden_n, lanes.load(gi_n)));
      const Batch previous = lanes.load(h + row);
      lanes.store(r + row, reset);
      lanes.store(z + row, update);
      lanes.store(gh_n + row, hidden_n);
      lanes.store(n + row, candidate);
      lanes.store(h_new + row, (one - update) * candidate + update * previous);
    });
  }
}

void gru_gates_backward(real* dgi, real* dgh, real* dh_direct, const real* dh_new, const real* r,
                        const real* z, const real* n, const real* gh_n, const real* h, int64_t B,
                        int64_t H) {
  const Batch one(real(1));
  for (int64_t b = 0; b < B; ++b) {
    real* dgi_r = dgi + b * 3 * H;
    real* dgh_r = dgh + b * 3 * H;
    const int64_t row = b * H;
    over_lanes(H, [&](const Lanes& lanes) {
      const Batch grad_out = lanes.load(dh_new + row);
      const Batch reset = lanes.load(r + row);
      const Batch update = lanes.load(z + row);
      const Batch candidate = lanes.load(n + row);
      const Batch dn = grad_out * (one - update);
      const Batch dz = grad_out * (lanes.load(h + row) - candidate);
      const Batch da_n = dn * (one - candidate * candidate);
      const Batch da_z = dz * update * (one - update);
      const Batch da_r = da_n * lanes.load(gh_n + row) * reset * (one - reset);
      lanes.store(dgi_r, da_r);
      lanes.store(dgi_r + H, da_z);
      lanes.store(dgi_r + 2 * H, da_n);
      lanes.store(dgh_r, da_r);
      lanes.store(dgh_r + H, da_z);
      lanes.store(dgh_r + 2 * H, da_n * reset);
      lanes.store(dh_direct + row, grad_out * update);
    });
  }
}

#endif  // ATTOGRAD_USE_SIMD; without it kernels::f is scalar::f (tensor/kernels.hpp)

}  // namespace attograd::kernels
