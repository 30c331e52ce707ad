// tensor/kernels_matmul.cpp — matrix products (matmul in its layouts,
// add_scaled_product_tn, bmm): the scalar
// specification first, then the xsimd version that must agree with it.
#include <algorithm>
#include <array>
#include <cmath>

#include "tensor/kernels.hpp"
#include "tensor/kernels_matvec.hpp"
#include "tensor/kernels_simd.hpp"
#include "tensor/parallel.hpp"

namespace attograd::kernels {

namespace scalar {

void matmul_forward(real* c, const real* a, Layout a_layout, const real* b, Layout b_layout,
                    int64_t M, int64_t K, int64_t N) {
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      real total = 0;
      for (int64_t k = 0; k < K; ++k) {
        const real left = a_layout == Layout::normal ? a[i * K + k] : a[k * M + i];
        const real right = b_layout == Layout::normal ? b[k * N + j] : b[j * K + k];
        total += left * right;
      }
      c[i * N + j] = total;
    }
  }
}

void bmm_forward(real* c, const real* a, Layout a_layout, int64_t a_step, const real* b,
                 Layout b_layout, int64_t b_step, int64_t batches, int64_t M, int64_t K,
                 int64_t N) {
  for (int64_t i = 0; i < batches; ++i) {
    scalar::matmul_forward(c + i * M * N, a + i * a_step, a_layout, b + i * b_step, b_layout, M, K,
                           N);
  }
}

void add_scaled_product_tn(real* c, real alpha, const real* a, const real* b, int64_t M, int64_t K,
                           int64_t N) {
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      real total = 0;
      for (int64_t k = 0; k < K; ++k) total += a[k * M + i] * b[k * N + j];
      c[i * N + j] = std::fma(alpha, total, c[i * N + j]);
    }
  }
}

}  // namespace scalar

#if ATTOGRAD_USE_SIMD

using namespace simd;

namespace {

// Where the kernels below find a[i][k], the entry of row i of the left
// operand at step k: a[i · row_step + k · k_step]. A row-major a (M,K) has
// steps (K, 1); a transposed one, stored (K,M) as a weight gradient's dyᵀ
// is, has steps (1, M) — the same kernels read both, no copy.
struct LeftOperand {
  const real* a;
  int64_t row_step, k_step;
  real at(int64_t i, int64_t k) const { return a[i * row_step + k * k_step]; }
  LeftOperand shifted(int64_t i, int64_t k) const {
    return {a + i * row_step + k * k_step, row_step, k_step};
  }
};

// How a kernel puts its finished block t of the product into c:
//   overwrite     c = t
//   continue_sum  c = t, the sum started from c's value (the later blocks of a
//                 k loop cut into blocks; the sum is the same as one unblocked)
//   add_scaled    c = c + α·t, in one rounding: a product added into what c
//                 already holds, e.g. W −= lr·dyᵀx with α = −lr.
struct Into {
  enum class Mode { overwrite, continue_sum, add_scaled };
  Mode mode = Mode::overwrite;
  real alpha = 1;
};

// c (MR rows × NV·W columns, row stride ldc) = a-rows (MR × K) @ b-strip
// (K × NV·W, row stride ldb): the register-blocked inner kernel. MR·NV
// accumulators stay in registers for the whole K loop; each step loads NV
// vectors of b once and reuses them for MR rows.
template <int MR, int NV>
void micro_kernel(real* c, int64_t ldc, LeftOperand a, const real* b, int64_t ldb, int64_t K,
                  Into into) {
  Batch acc[MR][NV];
  for (int r = 0; r < MR; ++r) {
    for (int v = 0; v < NV; ++v) {
      acc[r][v] =
          into.mode == Into::Mode::continue_sum ? load(c + r * ldc + v * W) : Batch(real(0));
    }
  }
  for (int64_t k = 0; k < K; ++k) {
    Batch row[NV];
    for (int v = 0; v < NV; ++v) row[v] = load(b + k * ldb + v * W);
    for (int r = 0; r < MR; ++r) {
      const Batch scale(a.at(r, k));
      for (int v = 0; v < NV; ++v) acc[r][v] = simd::fma(scale, row[v], acc[r][v]);
    }
  }
  for (int r = 0; r < MR; ++r) {
    for (int v = 0; v < NV; ++v) {
      real* out = c + r * ldc + v * W;
      if (into.mode == Into::Mode::add_scaled) {
        simd::fma(Batch(into.alpha), acc[r][v], load(out)).store_unaligned(out);
      } else {
        acc[r][v].store_unaligned(out);
      }
    }
  }
}

// MR rows of c, all N columns, over kc steps of k.
template <int MR>
void row_block(real* c, LeftOperand a, const real* b, int64_t N, int64_t kc, Into into) {
  int64_t j = 0;
  for (; j + 2 * W <= N; j += 2 * W) micro_kernel<MR, 2>(c + j, N, a, b + j, N, kc, into);
  for (; j + W <= N; j += W) micro_kernel<MR, 1>(c + j, N, a, b + j, N, kc, into);
  // Columns left over (fewer than W): plain dot products.
  for (; j < N; ++j) {
    for (int r = 0; r < MR; ++r) {
      real total = into.mode == Into::Mode::continue_sum ? c[r * N + j] : real(0);
      for (int64_t k = 0; k < kc; ++k) total += a.at(r, k) * b[k * N + j];
      c[r * N + j] =
          into.mode == Into::Mode::add_scaled ? std::fma(into.alpha, total, c[r * N + j]) : total;
    }
  }
}

// The rows of c four at a time, then the last 1–3 rows as one block too: one
// at a time, each would read all of b again (a sentence of 7 words is one
// block of 4 and 3 rows).
void row_blocks(real* c, LeftOperand a, const real* b, int64_t M, int64_t N, int64_t kc,
                Into into) {
  int64_t i = 0;
  for (; i + 4 <= M; i += 4) row_block<4>(c + i * N, a.shifted(i, 0), b, N, kc, into);
  const LeftOperand rest = a.shifted(i, 0);
  switch (M - i) {
    case 3:
      row_block<3>(c + i * N, rest, b, N, kc, into);
      break;
    case 2:
      row_block<2>(c + i * N, rest, b, N, kc, into);
      break;
    case 1:
      row_block<1>(c + i * N, rest, b, N, kc, into);
      break;
    default:
      break;
  }
}

// c (M,N) = a @ b with b row-major (K,N) and a read through its steps.
// Blocked over K so a strip of b stays in cache; the first block starts from
// zero rather than from c, so with one time step (K = 1) c is written once.
void matmul_xn(real* c, LeftOperand a, const real* b, int64_t M, int64_t K, int64_t N) {
  constexpr int64_t kBlockK = 256;
  if (N == 1 && a.k_step == 1) {
    // One column: b is a contiguous vector and each entry one dot product
    // (attention pooling's (1,K) @ (K,1), many times over in a bmm).
    for (int64_t i = 0; i < M; ++i) c[i] = dot(a.a + i * a.row_step, b, K);
    return;
  }
  if (K == 0) std::fill_n(c, M * N, real(0));
  for (int64_t k0 = 0; k0 < K; k0 += kBlockK) {
    const int64_t kc = std::min(kBlockK, K - k0);
    const Into into{k0 > 0 ? Into::Mode::continue_sum : Into::Mode::overwrite};
    row_blocks(c, a.shifted(0, k0), b + k0 * N, M, N, kc, into);
  }
}

// c = a @ b, both row-major.
void matmul_nn(real* c, const real* a, const real* b, int64_t M, int64_t K, int64_t N) {
  matmul_xn(c, LeftOperand{a, K, 1}, b, M, K, N);
}

// R rows of c (row stride N), columns [j0, j1): rows of a (stride K) against
// rows of b (stride K). Each row of b is loaded once for all R rows of a (2R
// independent FMA chains), and each entry is summed exactly as dot() sums it:
// even and odd batches in two accumulators, the ragged tail into the odd one.
template <int R>
void nt_rows(real* c, const real* a, const real* b, int64_t K, int64_t N, int64_t j0, int64_t j1) {
  for (int64_t j = j0; j < j1; ++j) {
    const real* row = b + j * K;
    std::array<Batch, R> even, odd;
    even.fill(Batch(real(0)));
    odd.fill(Batch(real(0)));
    int64_t k = 0;
    for (; k + 2 * W <= K; k += 2 * W) {
      const Batch first = load(row + k), second = load(row + k + W);
      for (int r = 0; r < R; ++r) {
        even[r] = simd::fma(load(a + r * K + k), first, even[r]);
        odd[r] = simd::fma(load(a + r * K + k + W), second, odd[r]);
      }
    }
    for (; k + W <= K; k += W) {
      const Batch first = load(row + k);
      for (int r = 0; r < R; ++r) even[r] = simd::fma(load(a + r * K + k), first, even[r]);
    }
    if (k < K) {
      const Batch last = tail_batch(row, K, 0);
      for (int r = 0; r < R; ++r) {
        odd[r] = simd::fma(tail_batch(a + r * K, K, 0), last, odd[r]);
      }
    }
    for (int r = 0; r < R; ++r) c[r * N + j] = xsimd::hadd(even[r] + odd[r]);
  }
}

// c = a @ bᵀ where b is stored (N, K): every entry is a dot product of two
// contiguous rows, which is what Linear's forward (x @ Wᵀ) needs. Rows of a
// meet b four at a time (the last 1–3 together), and the loop is blocked over
// the rows of b so that a block stays in cache while every row of a meets it.
void matmul_nt(real* c, const real* a, const real* b, int64_t M, int64_t K, int64_t N) {
  constexpr int64_t kBlockN = 32;
  for (int64_t j0 = 0; j0 < N; j0 += kBlockN) {
    const int64_t j1 = std::min(N, j0 + kBlockN);
    int64_t i = 0;
    for (; i + 4 <= M; i += 4) nt_rows<4>(c + i * N, a + i * K, b, K, N, j0, j1);
    switch (M - i) {
      case 3:
        nt_rows<3>(c + i * N, a + i * K, b, K, N, j0, j1);
        break;
      case 2:
        nt_rows<2>(c + i * N, a + i * K, b, K, N, j0, j1);
        break;
      case 1:
        nt_rows<1>(c + i * N, a + i * K, b, K, N, j0, j1);
        break;
      default:
        break;
    }
  }
}

// Rows [row_begin, row_end) of c = aᵀ @ b where a is stored (K, M):
// c[i][j] = Σ_k a[k][i] · b[k][j], a sum of K outer products (the weight
// gradient dyᵀ @ x). The register-blocked kernel of matmul_nn, reading a's
// column i as the left operand's row i, so threads can share the rows.
void matmul_tn(real* c, const real* a, const real* b, int64_t M, int64_t K, int64_t N,
               int64_t row_begin, int64_t row_end) {
  matmul_xn(c + row_begin * N, LeftOperand{a + row_begin, 1, M}, b, row_end - row_begin, K, N);
}

// Rows [i0, i1) of c = a @ b on this thread, by the layouts' kernel above
// (both operands transposed: the scalar loop, all rows).
void matmul_rows(real* c, const real* a, Layout a_layout, const real* b, Layout b_layout, int64_t M,
                 int64_t K, int64_t N, int64_t i0, int64_t i1) {
  if (matvec_forward(c, a, a_layout, b, b_layout, M, K, N)) return;  // one row: kernels_matvec
  if (a_layout == Layout::transposed && b_layout == Layout::transposed) {
    scalar::matmul_forward(c, a, a_layout, b, b_layout, M, K, N);
  } else if (a_layout == Layout::transposed) {
    matmul_tn(c, a, b, M, K, N, i0, i1);
  } else if (b_layout == Layout::normal) {
    matmul_nn(c + i0 * N, a + i0 * K, b, i1 - i0, K, N);
  } else {
    matmul_nt(c + i0 * N, a + i0 * K, b, i1 - i0, K, N);
  }
}

// Large products are shared between threads by blocks of 4 rows of c (the
// height of the register blocks above): rows(i0, i1) runs on one thread for
// each share. Every entry of c is still summed by one thread in the order
// above, so the result does not depend on the thread count
// (tensor/parallel.hpp).
template <typename Rows>
void share_rows(int64_t M, int64_t K, int64_t N, Rows&& rows) {
  constexpr int64_t kRowsPerBlock = 4;
  const int64_t blocks = (M + kRowsPerBlock - 1) / kRowsPerBlock;
  parallel::parallel_for(blocks, M * K * N, [&](int64_t block_begin, int64_t block_end) {
    rows(block_begin * kRowsPerBlock, std::min(M, block_end * kRowsPerBlock));
  });
}

}  // namespace

void matmul_forward(real* c, const real* a, Layout a_layout, const real* b, Layout b_layout,
                    int64_t M, int64_t K, int64_t N) {
  if (a_layout == Layout::transposed && b_layout == Layout::transposed) {
    scalar::matmul_forward(c, a, a_layout, b, b_layout, M, K, N);
    return;
  }
  share_rows(M, K, N, [&](int64_t i0, int64_t i1) {
    matmul_rows(c, a, a_layout, b, b_layout, M, K, N, i0, i1);
  });
}

// c += α · aᵀ @ b, a stored (K,M): the kernel of matmul_tn over all k at once
// (the sum of each entry is the one matmul_forward makes), then added into c.
// Shared between threads by blocks of rows as matmul_forward is.
void add_scaled_product_tn(real* c, real alpha, const real* a, const real* b, int64_t M, int64_t K,
                           int64_t N) {
  if (M == 1 && N == 1) {  // one dot product, which matmul_xn sums with dot()
    c[0] = std::fma(alpha, dot(a, b, K), c[0]);
    return;
  }
  share_rows(M, K, N, [&](int64_t i0, int64_t i1) {
    row_blocks(c + i0 * N, LeftOperand{a + i0, 1, M}, b, i1 - i0, N, K,
               Into{Into::Mode::add_scaled, alpha});
  });
}

namespace {

// c[i] = Σ_k a_i[k] · b_i[k] for `batches` pairs of K-vectors (a_i at a + i·a_step,
// b_i likewise): a batch of (1,K) @ (K,1) products, attention pooling's
// Σ_k α_k v_k. matmul_forward hands such a product to matvec_nt, so each is
// summed exactly as matvec_nt sums one row (tensor/kernels_matvec.cpp): one
// accumulator over the whole batches in order, a horizontal add, then the
// last K mod W products one at a time. Four dot products at a time, so four
// chains of dependent FMAs overlap instead of waiting on one another.
void batched_dots(real* c, const real* a, int64_t a_step, const real* b, int64_t b_step,
                  int64_t batches, int64_t K) {
  const int64_t k_full = K - K % W;
  auto finish = [&](int64_t i, Batch acc) {
    const real* x = a + i * a_step;
    const real* w = b + i * b_step;
    real total = xsimd::hadd(acc);
    for (int64_t k = k_full; k < K; ++k) total += w[k] * x[k];
    c[i] = total;
  };
  int64_t i = 0;
  for (; i + 4 <= batches; i += 4) {
    std::array<Batch, 4> acc;
    acc.fill(Batch(real(0)));
    for (int64_t k = 0; k < k_full; k += W) {
      for (int64_t r = 0; r < 4; ++r) {
        acc[r] = simd::fma(load(b + (i + r) * b_step + k), load(a + (i + r) * a_step + k), acc[r]);
      }
    }
    for (int64_t r = 0; r < 4; ++r) finish(i + r, acc[r]);
  }
  for (; i < batches; ++i) {
    Batch acc(real(0));
    for (int64_t k = 0; k < k_full; k += W) {
      acc = simd::fma(load(b + i * b_step + k), load(a + i * a_step + k), acc);
    }
    finish(i, acc);
  }
}

}  // namespace

// One product alone shares its rows between threads (matmul_forward above); a
// batch shares whole products, each computed on one thread by the same
// kernel, so every entry is summed in the same order either way — and many
// tiny products cost one dispatch instead of one each.
void bmm_forward(real* c, const real* a, Layout a_layout, int64_t a_step, const real* b,
                 Layout b_layout, int64_t b_step, int64_t batches, int64_t M, int64_t K,
                 int64_t N) {
  if (batches == 1) {
    matmul_forward(c, a, a_layout, b, b_layout, M, K, N);
    return;
  }
  if (M == 1 && N == 1 && a_layout == Layout::normal) {
    batched_dots(c, a, a_step, b, b_step, batches, K);
    return;
  }
  if (K == 1) {
    // Outer products, (M,1) @ (1,N): c[i][m][n] = a[i][m] · b[i][n], one rounded
    // product per entry as every matmul kernel makes it (attention pooling's
    // backward dα = df ⊗ v). a and b are plain vectors in either layout.
    for (int64_t i = 0; i < batches; ++i) {
      for (int64_t m = 0; m < M; ++m) {
        const Batch scale(a[i * a_step + m]);
        map(
            c + (i * M + m) * N, N, [&](Batch v, Batch, Batch) { return scale * v; },
            b + i * b_step);
      }
    }
    return;
  }
  parallel::parallel_for(batches, batches * M * K * N, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      matmul_rows(c + i * M * N, a + i * a_step, a_layout, b + i * b_step, b_layout, M, K, N, 0, M);
    }
  });
}

#else  // ATTOGRAD_USE_SIMD off: the library runs the reference loops.

void matmul_forward(real* c, const real* a, Layout a_layout, const real* b, Layout b_layout,
                    int64_t M, int64_t K, int64_t N) {
  scalar::matmul_forward(c, a, a_layout, b, b_layout, M, K, N);
}
void bmm_forward(real* c, const real* a, Layout a_layout, int64_t a_step, const real* b,
                 Layout b_layout, int64_t b_step, int64_t batches, int64_t M, int64_t K,
                 int64_t N) {
  scalar::bmm_forward(c, a, a_layout, a_step, b, b_layout, b_step, batches, M, K, N);
}
void add_scaled_product_tn(real* c, real alpha, const real* a, const real* b, int64_t M, int64_t K,
                           int64_t N) {
  scalar::add_scaled_product_tn(c, alpha, a, b, M, K, N);
}

#endif

}  // namespace attograd::kernels
