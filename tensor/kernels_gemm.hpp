// tensor/kernels_gemm.hpp — the general matrix product every large matmul,
// bmm and weight gradient goes through.
//
// c = a @ b for a (M,K) and b (K,N), each stored in either layout with a row
// stride of its own (a leading dimension, as BLAS calls it), so a block of a
// larger matrix is multiplied in place. kernels::matmul_forward, bmm_forward
// and add_scaled_product_tn (tensor/kernels.hpp) call it for every product
// that is not one row (tensor/kernels_matvec.hpp) or one column.
//
// Every entry is summed as one chain of fused multiply-adds over k in order,
//   t = fma(a[i][K−1], b[K−1][j], … fma(a[i][1], b[1][j], fma(a[i][0], b[0][j], 0)) …),
// whatever the tiling, the cache blocking, the instruction set or the thread
// count: so the result is a function of the operands alone, and equals the
// scalar loop below bit for bit wherever the hardware fuses multiply-adds
// (tests/tensor/test_kernels_gemm.cpp). docs/kernels.md draws the tiles.
#pragma once

#include <cstdint>

#include "tensor/kernels.hpp"
#include "tensor/shape.hpp"

namespace attograd::kernels {

// A matrix operand as stored: X[r][c] = data[r·ld + c] when layout is normal,
// data[c·ld + r] when transposed (the array holds Xᵀ with row stride ld).
struct MatrixRef {
  const real* data;
  Layout layout;
  int64_t ld;
  real at(int64_t r, int64_t c) const {
    return layout == Layout::normal ? data[r * ld + c] : data[c * ld + r];
  }
};

// What gemm does with the product t: overwrite c (c = t), or, with
// add_scaled, add α·t into c in one rounding per entry, c = fma(α, t, c).
struct GemmInto {
  bool add_scaled = false;
  real alpha = 1;
};

namespace scalar {
void gemm(real* c, int64_t ldc, MatrixRef a, MatrixRef b, int64_t M, int64_t K, int64_t N,
          GemmInto into = {});
}  // namespace scalar

#if ATTOGRAD_USE_SIMD  // without it, kernels::gemm is scalar::gemm (tensor/kernels.hpp)
// c: (M,N) with row stride ldc; a: (M,K); b: (K,N).  c = a @ b (or c += α·a @ b).
// Packed panels, a register-blocked micro-kernel, cache blocking; products of
// at least parallel::min_parallel_work() multiply-adds are split between the
// threads by column panels or row tiles (the same bits on any thread count).
void gemm(real* c, int64_t ldc, MatrixRef a, MatrixRef b, int64_t M, int64_t K, int64_t N,
          GemmInto into = {});
#endif

// The same on the calling thread only (bmm's products, already one per thread).
void gemm_serial(real* c, int64_t ldc, MatrixRef a, MatrixRef b, int64_t M, int64_t K, int64_t N,
                 GemmInto into = {});

// The tile and block sizes gemm uses on this machine, for docs and benchmarks:
// micro-tile rows × columns, the K, M and N cache blocks, and the size in
// bytes up to which an operand is read in place rather than packed.
struct GemmBlocking {
  int64_t tile_rows, tile_cols, k_block, m_block, n_block, in_place_bytes;
};
GemmBlocking gemm_blocking();

// Makes gemm read an operand in place, unpacked, exactly when it holds at
// most `bytes` bytes (0: pack every operand that can be packed), instead of
// by its own rules (half of L1, and the shapes packing does not pay for); a
// negative value restores those rules. For tests, which run every way
// against the specification, and for benchmarks; not to be called while a
// product runs.
void set_gemm_in_place_limit(int64_t bytes);

}  // namespace attograd::kernels
