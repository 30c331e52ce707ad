// tensor/kernels_gemm.cpp — the general matrix product: the scalar
// specification first, then the packed, register-blocked xsimd version that
// must equal it bit for bit (docs/kernels.md, "GEMM", draws the tiles).
#include "tensor/kernels_gemm.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <utility>
#include <vector>

#include "tensor/kernels_simd.hpp"
#include "tensor/parallel.hpp"

namespace attograd::kernels {

namespace scalar {

void gemm(real* c, int64_t ldc, MatrixRef a, MatrixRef b, int64_t M, int64_t K, int64_t N,
          GemmInto into) {
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      real total = 0;
      for (int64_t k = 0; k < K; ++k) total = std::fma(a.at(i, k), b.at(k, j), total);
      real& out = c[i * ldc + j];
      out = into.add_scaled ? std::fma(into.alpha, total, out) : total;
    }
  }
}

}  // namespace scalar

#if ATTOGRAD_USE_SIMD

using namespace simd;

namespace {

// The operand m with its first row and column moved to (r0, c0): a block of it.
MatrixRef block(MatrixRef m, int64_t r0, int64_t c0) {
  const int64_t offset = m.layout == Layout::normal ? r0 * m.ld + c0 : c0 * m.ld + r0;
  return {m.data + offset, m.layout, m.ld};
}

// ---- Register blocking -----------------------------------------------------
// A micro-tile is h rows × NV·W columns of c (h ≤ kMaxTileRows, NV ≤ 2), held
// in h·NV accumulators for a whole block of k. Each step of k loads NV
// vectors of the packed B panel and broadcasts h values of the packed A
// tile: h·NV FMAs for NV + h loads. AVX-512 has 32 vector registers, so 8
// rows × 2 vectors (16 accumulators); AVX2 and the others 16, so 6 × 2.
// When all of c is one vector wide (N ≤ W: attention's (10,K) @ (K,10)), a
// tile of 6 or 8 rows would be that many accumulators, too few to hide the
// FMA latency, so such a product takes tiles of up to 16 (AVX-512) or 12
// rows × 1 vector instead.
constexpr int kPanelVectors = 2;
constexpr int64_t kPanelWidth = kPanelVectors * W;
constexpr int kMaxTileRows = sizeof(Batch) >= 64 ? 8 : 6;
constexpr int kMaxNarrowTileRows = 2 * kMaxTileRows;

// The `count` values at p (all W when count ≥ W; the rest of the lanes 0).
Batch load_columns(const real* p, int64_t count) {
  return count >= W ? load(p) : FirstLanes(count).read(p);
}
void store_columns(real* p, Batch value, int64_t count) {
  if (count >= W) {
    value.store_unaligned(p);
  } else {
    FirstLanes(count).write(p, value);
  }
}

// Where a micro-tile finds A's entry (r, k): a[r·step + k] when the tile's
// rows run along k (a packed normal tile, step kc, or a normal operand in
// place, step its leading dimension), else a[r + k·step] (a packed transposed
// tile, step h, or a transposed operand in place). Which of the two is the
// micro-tile's template argument AlongK, so one of the strides is a constant 1.
// (Two words, so it travels in registers: a third made every call spill it.)
struct TileRows {
  const real* a;
  int64_t step;
};

// Where a micro-tile finds B's row k of its panel: b + k·k_step, NV vectors —
// the packed panel (k_step NV·W), or b in place (k_step its leading
// dimension), where a panel's last vector may hold fewer than W columns of b
// and is read masked.
struct PanelRows {
  const real* b;
  int64_t k_step;
};

// What a micro-tile does with c: start its sums from zero or, for the later
// blocks of k, continue them from what c holds; and store them, or — when
// its block of k is the whole of K, so the sums are complete — add α times
// them into c in one rounding, c = fma(α, t, c) (GemmInto's add_scaled).
struct TileStore {
  bool continue_sum;
  bool add_scaled;
  real alpha;
};

// c (MR × cols, row stride ldc, cols ≤ NV·W) = the product of the A tile
// (MR × kc) and the B panel (kc × NV·W), stored as `store` says: either way
// one FMA chain per entry in k order. Masked: the panel is b in place and its
// last vector holds cols − (NV − 1)·W < W columns.
// (The loops over the rows are unrolled by request: the accumulators stay in
// registers only when every acc[r][v] is a name the compiler can see, and
// GCC's own limits leave the 16-row tiles rolled.)
template <int MR, int NV, bool Masked, bool AlongK>
void micro_tile(real* c, int64_t ldc, TileRows a, PanelRows b, int64_t kc, int64_t cols,
                TileStore store) {
  Batch acc[MR][NV];
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) {
    for (int v = 0; v < NV; ++v) {
      acc[r][v] =
          store.continue_sum ? load_columns(c + r * ldc + v * W, cols - v * W) : Batch(real(0));
    }
  }
  const FirstLanes last_columns(Masked ? cols - (NV - 1) * W : 0);
  for (int64_t k = 0; k < kc; ++k) {
    Batch column[NV];
    for (int v = 0; v < NV; ++v) {
      const real* row = b.b + k * b.k_step + v * W;
      column[v] = Masked && v == NV - 1 ? last_columns.read(row) : load(row);
    }
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
      const Batch scale(AlongK ? a.a[r * a.step + k] : a.a[r + k * a.step]);
      for (int v = 0; v < NV; ++v) acc[r][v] = simd::fma(scale, column[v], acc[r][v]);
    }
  }
  if (store.add_scaled) {
    const Batch alpha(store.alpha);
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
      for (int v = 0; v < NV; ++v) {
        real* to = c + r * ldc + v * W;
        const int64_t count = cols - v * W;
        store_columns(to, simd::fma(alpha, acc[r][v], load_columns(to, count)), count);
      }
    }
    return;
  }
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) {
    for (int v = 0; v < NV; ++v) store_columns(c + r * ldc + v * W, acc[r][v], cols - v * W);
  }
}

using MicroTile = void (*)(real*, int64_t, TileRows, PanelRows, int64_t, int64_t, TileStore);

template <int NV, bool Masked, bool AlongK, size_t... Rows>
constexpr std::array<MicroTile, sizeof...(Rows)> tiles_of(std::index_sequence<Rows...>) {
  return {&micro_tile<int(Rows) + 1, NV, Masked, AlongK>...};
}
template <int NV, int MaxRows>
using TileTable = std::array<std::array<std::array<MicroTile, MaxRows>, 2>, 2>;
template <int NV, int MaxRows>
constexpr TileTable<NV, MaxRows> tile_table() {
  constexpr auto rows = std::make_index_sequence<MaxRows>{};
  return {{{tiles_of<NV, false, false>(rows), tiles_of<NV, false, true>(rows)},
           {tiles_of<NV, true, false>(rows), tiles_of<NV, true, true>(rows)}}};
}
// kMicroTiles[m][k][h − 1] is the tile of h rows and 2 vectors,
// kNarrowMicroTiles[m][k][h − 1] that of h rows and 1 vector; the panel's last
// vector is read masked when m is 1, the tile's rows run along k when k is 1.
constexpr TileTable<2, kMaxTileRows> kMicroTiles = tile_table<2, kMaxTileRows>();
constexpr TileTable<1, kMaxNarrowTileRows> kNarrowMicroTiles = tile_table<1, kMaxNarrowTileRows>();

// ---- Cache blocking ----------------------------------------------------------
// kc: a B panel (kc × 2W) fills two thirds of L1, leaving room for the A
//     tile streaming past it (256 on a 48 KB L1 with AVX-512 floats: 2 % faster
//     at 512³ and 1024³ than half of L1, medians of 30 alternating runs);
// mc: the packed A block (mc × kc) half of L2, a whole number of full tiles;
// nc: the packed B block (kc × nc) at most 4 MB of L3 (virtual machines report
//     the whole socket's L3, which one core does not get).
// in_l1: an operand of at most this many bytes is read in place, unpacked
//     (half of L1; set_gemm_in_place_limit changes it for tests).
struct Blocks {
  int64_t kc, mc, nc, in_l1;
};
std::atomic<int64_t> in_place_limit{-1};  // −1: the default, Blocks::in_l1

#if defined(_SC_LEVEL1_DCACHE_SIZE)
int64_t cache_size(int name, int64_t fallback) {
  const long size = sysconf(name);
  return size > 0 ? size : fallback;
}
#endif

const Blocks& blocks() {
  static const Blocks sizes = [] {
    constexpr int64_t bytes = sizeof(real);
#if defined(_SC_LEVEL1_DCACHE_SIZE)
    const int64_t l1 = cache_size(_SC_LEVEL1_DCACHE_SIZE, 32 << 10);
    const int64_t l2 = cache_size(_SC_LEVEL2_CACHE_SIZE, 512 << 10);
    const int64_t l3 = cache_size(_SC_LEVEL3_CACHE_SIZE, 8 << 20);
#else
    const int64_t l1 = 32 << 10, l2 = 512 << 10, l3 = 8 << 20;
#endif
    const int64_t kc = std::clamp<int64_t>(l1 * 2 / 3 / (kPanelWidth * bytes), 32, 1024);
    int64_t mc = std::clamp<int64_t>(l2 / 2 / (kc * bytes), kMaxTileRows, 4096);
    mc -= mc % kMaxTileRows;
    int64_t nc =
        std::clamp<int64_t>(std::min<int64_t>(l3 / 4, 4 << 20) / (kc * bytes), kPanelWidth, 16384);
    nc -= nc % kPanelWidth;
    return Blocks{kc, mc, nc, l1 / 2};
  }();
  return sizes;
}

// ---- Packing -----------------------------------------------------------------
// The h rows of a from (i0, k0), kc steps of k: a stored normally as its
// rows, ap[r·kc + k]; a stored transposed as its columns, ap[k·h + r]. Either
// way a copy of contiguous runs, which the micro-tile then reads with
// row_step kc or h.
void pack_tile(real* ap, MatrixRef a, int64_t i0, int h, int64_t k0, int64_t kc) {
  const MatrixRef from = block(a, i0, k0);
  if (a.layout == Layout::transposed) {
    if (h == kMaxTileRows) {  // a full tile: a fixed-size copy the compiler makes one move
      for (int64_t k = 0; k < kc; ++k) {
        std::copy_n(from.data + k * from.ld, kMaxTileRows, ap + k * kMaxTileRows);
      }
      return;
    }
    for (int64_t k = 0; k < kc; ++k) std::copy_n(from.data + k * from.ld, h, ap + k * h);
  } else {
    for (int r = 0; r < h; ++r) std::copy_n(from.data + r * from.ld, kc, ap + r * kc);
  }
}

// The `cols` columns of b from (k0, j0), kc steps of k, as a panel `width`
// wide (bp[k·width + j]), the columns past `cols` zero.
void pack_panel(real* bp, MatrixRef b, int64_t k0, int64_t kc, int64_t j0, int64_t cols,
                int64_t width) {
  const MatrixRef from = block(b, k0, j0);
  if (b.layout == Layout::normal) {  // a row of the panel is a piece of a row of b
    for (int64_t k = 0; k < kc; ++k) {
      const real* row = from.data + k * from.ld;
      real* out = bp + k * width;
      for (int64_t j = 0; j < width; j += W) {
        const int64_t count = cols - j;
        if (count >= W) {
          load(row + j).store_aligned(out + j);
        } else {  // zeros, then the last few values over them (no load of just-stored lanes)
          Batch(real(0)).store_aligned(out + j);
          for (int64_t i = 0; i < W; ++i) {
            if (i < count) out[j + i] = row[j + i];
          }
        }
      }
    }
  } else {  // a column of the panel is a piece of a row of the stored bᵀ
    for (int64_t k = 0; k < kc; ++k)
      std::fill(bp + k * width + cols, bp + (k + 1) * width, real(0));
    // W × W blocks through registers (simd::transpose), the ragged edges one by one.
    const int64_t whole_j = kHaveTranspose ? cols - cols % W : 0;
    const int64_t whole_k = kHaveTranspose ? kc - kc % W : 0;
    for (int64_t j = 0; j < whole_j; j += W) {
      for (int64_t k = 0; k < whole_k; k += W) {
        std::array<Batch, W> block;
        for (int64_t i = 0; i < W; ++i) block[i] = load(from.data + (j + i) * from.ld + k);
        transpose(block);
        for (int64_t i = 0; i < W; ++i) block[i].store_aligned(bp + (k + i) * width + j);
      }
    }
    for (int64_t j = 0; j < cols; ++j) {
      for (int64_t k = j < whole_j ? whole_k : 0; k < kc; ++k) {
        bp[k * width + j] = from.data[j * from.ld + k];
      }
    }
  }
}

// The row tiles of a block of m rows: as few as tiles of at most `most` rows
// allow, their heights differing by at most one (10 rows: 5 + 5, not 8 + 2),
// so that no tile has too few accumulators to hide the FMA latency.
struct RowTiles {
  int64_t count, base, larger;  // the first `larger` tiles have base + 1 rows
  RowTiles(int64_t m, int64_t most)
      : count((m + most - 1) / most), base(m / count), larger(m % count) {}
  int height(int64_t t) const { return static_cast<int>(base + (t < larger ? 1 : 0)); }
  int64_t start(int64_t t) const { return t * base + std::min(t, larger); }
};

// Packing space, one per thread, grown as needed and kept.
using AlignedBuffer = std::vector<real, xsimd::aligned_allocator<real, 64>>;
struct Workspace {
  AlignedBuffer a, b, product;
};
Workspace& workspace() {
  thread_local Workspace space;
  return space;
}
real* room(AlignedBuffer& buffer, int64_t size) {
  if (static_cast<int64_t>(buffer.size()) < size) buffer.resize(static_cast<size_t>(size));
  return buffer.data();
}

// c = a @ b for M, K, N ≥ 1 on this thread: for each N block, each K block
// (packing its B panels once), each M block (packing its A tiles once), every
// panel against every tile, so a panel stays in L1 while the tiles of the A
// block stream past it from L2.
//
// Packing pays when an operand is read many times from far away. It does
// not when the operand is small enough to stay in L1 (a 64 × 64 product
// spends a fifth of its time packing), nor for A when there is one panel
// (each tile is read once), nor for B when c is one vector wide (attention's
// (10,K) @ (K,10): 16 stores per 10 FMAs) or has at most two tiles of rows
// (a sentence's dY @ W: each panel read once or twice): those are read in
// place, B only when it is stored normally (its rows are the panel's rows,
// the last columns read masked). set_gemm_in_place_limit replaces all of
// these rules by the one limit, for tests.
// When the whole B block is small enough for L1 (kc·nc within in_l1, as in
// an SGD step's rank-T update c += α·dYᵀX of a 2231 × 256 weight, T ≈ 8),
// the order turns: each tile of rows meets every panel before the next, so
// c, the large operand there, streams in and out row by row instead of in
// strips two vectors wide a row apart, which the prefetchers follow poorly
// (docs/kernels.md, "GEMM", has what it saves). Each entry is still one FMA
// chain, so the bits do not change.
// `into` adds α·t into c instead of storing t; only for K within one block.
void gemm_blocks(real* c, int64_t ldc, MatrixRef a, MatrixRef b, int64_t M, int64_t K, int64_t N,
                 GemmInto into = {}) {
  const Blocks& sizes = blocks();
  Workspace& space = workspace();
  const bool narrow = N <= W;  // one panel, one vector wide: taller tiles
  const int64_t bytes = sizeof(real);
  const int64_t forced = in_place_limit.load();  // ≥ 0: a test's limit, and nothing else
  const bool b_in_place =
      b.layout == Layout::normal &&
      (forced >= 0 ? K * N * bytes <= forced
                   : narrow || K * N * bytes <= sizes.in_l1 || M <= 2 * kMaxTileRows);
  const bool a_in_place_always = M * K * bytes <= (forced >= 0 ? forced : sizes.in_l1);
  for (int64_t jc = 0; jc < N; jc += sizes.nc) {
    const int64_t nc = std::min(sizes.nc, N - jc);
    const int64_t panels = (nc + kPanelWidth - 1) / kPanelWidth;
    for (int64_t pc = 0; pc < K; pc += sizes.kc) {
      const int64_t kc = std::min(sizes.kc, K - pc);
      real* bp = b_in_place ? nullptr : room(space.b, panels * kc * kPanelWidth);
      for (int64_t p = 0; !b_in_place && p < panels; ++p) {
        const int64_t cols = std::min(kPanelWidth, nc - p * kPanelWidth);
        pack_panel(bp + p * kc * kPanelWidth, b, pc, kc, jc + p * kPanelWidth, cols,
                   cols > W ? kPanelWidth : W);
      }
      // The panel p of `cols` columns: its rows, and the tile kernels for it.
      auto panel_rows = [&](int64_t p, int64_t cols) {
        if (b_in_place) return PanelRows{block(b, pc, jc + p * kPanelWidth).data, b.ld};
        return PanelRows{bp + p * kc * kPanelWidth, cols > W ? kPanelWidth : W};
      };
      auto panel_tiles = [&](int64_t cols, bool along_k) {
        const int masked = b_in_place && cols % W != 0 ? 1 : 0;
        return cols > W ? kMicroTiles[masked][along_k].data()
                        : kNarrowMicroTiles[masked][along_k].data();
      };
      const bool rows_outer = forced < 0 && kc * nc * bytes <= sizes.in_l1;
      for (int64_t ic = 0; ic < M; ic += sizes.mc) {
        const int64_t mc = std::min(sizes.mc, M - ic);
        const RowTiles tiles(mc, narrow ? kMaxNarrowTileRows : kMaxTileRows);
        const bool pack = !a_in_place_always && (panels > 1 || forced >= 0);
        real* ap = pack ? room(space.a, mc * kc) : nullptr;
        // A normal operand's tiles run along k, packed or in place; a
        // transposed one's across it.
        const bool along_k = a.layout == Layout::normal;
        auto tile_rows = [&](int64_t t) {
          if (pack) {
            return TileRows{ap + tiles.start(t) * kc, along_k ? kc : tiles.height(t)};
          }
          return TileRows{block(a, ic + tiles.start(t), pc).data, a.ld};
        };
        for (int64_t t = 0; pack && t < tiles.count; ++t) {
          pack_tile(ap + tiles.start(t) * kc, a, ic + tiles.start(t), tiles.height(t), pc, kc);
        }
        auto run = [&](int64_t p, int64_t t) {
          const int64_t cols = std::min(kPanelWidth, nc - p * kPanelWidth);
          const int64_t i = ic + tiles.start(t);
          panel_tiles(cols, along_k)[tiles.height(t) - 1](
              c + i * ldc + jc + p * kPanelWidth, ldc, tile_rows(t), panel_rows(p, cols), kc, cols,
              TileStore{pc > 0, into.add_scaled, into.alpha});
        };
        if (rows_outer) {
          for (int64_t t = 0; t < tiles.count; ++t) {
            for (int64_t p = 0; p < panels; ++p) run(p, t);
          }
        } else {
          for (int64_t p = 0; p < panels; ++p) {
            for (int64_t t = 0; t < tiles.count; ++t) run(p, t);
          }
        }
      }
    }
  }
}

}  // namespace

// ---- Products one vector wide and short along k ------------------------------
// c = a @ b for N ≤ W and K ≤ kSmallK: a bmm's many tiny products, such as
// attention's (10,8) @ (8,10) per head. Blocking and packing cost more than
// such a product; here each row of c is one batch, summed along k by one FMA
// per k from zero — exactly the sum a micro-tile forms within one K block,
// and the specification's — with b's rows read in place or, when b is
// stored transposed, copied once into a K × W block on the stack. False when
// the product is not of that kind, or a test has fixed the packing rules
// (set_gemm_in_place_limit), so that those run as the test asks.
constexpr int64_t kSmallK = 64;

bool small_product(real* c, int64_t ldc, MatrixRef a, MatrixRef b, int64_t M, int64_t K,
                   int64_t N) {
  if (N > W || K > std::min(kSmallK, blocks().kc) || in_place_limit.load() >= 0) return false;
  alignas(64) std::array<real, kSmallK * W> copy;
  const real* rows = b.data;
  int64_t step = b.ld;
  if (b.layout == Layout::transposed) {
    for (int64_t k = 0; k < K; ++k) {
      for (int64_t j = 0; j < N; ++j) copy[k * W + j] = b.data[j * b.ld + k];
    }
    rows = copy.data();
    step = W;
  }
  const bool full = N == W;
  const FirstLanes lanes(full ? 0 : N);
  for (int64_t i = 0; i < M; ++i) {
    Batch acc(real(0));
    for (int64_t k = 0; k < K; ++k) {
      const real* row = rows + k * step;
      acc = simd::fma(Batch(a.at(i, k)), full ? load(row) : lanes.read(row), acc);
    }
    if (full) {
      acc.store_unaligned(c + i * ldc);
    } else {
      lanes.write(c + i * ldc, acc);
    }
  }
  return true;
}

void gemm_serial(real* c, int64_t ldc, MatrixRef a, MatrixRef b, int64_t M, int64_t K, int64_t N,
                 GemmInto into) {
  if (M == 0 || N == 0) return;
  if (!into.add_scaled) {
    if (K == 0) {
      for (int64_t i = 0; i < M; ++i) std::fill_n(c + i * ldc, N, real(0));
      return;
    }
    if (small_product(c, ldc, a, b, M, K, N)) return;
    gemm_blocks(c, ldc, a, b, M, K, N);
    return;
  }
  // c += α·t in one rounding per entry: within one block of K the tiles add
  // their finished sums straight into c; across several, t is formed whole
  // first (its sums run over the K blocks), then added.
  if (K >= 1 && K <= blocks().kc) {
    gemm_blocks(c, ldc, a, b, M, K, N, into);
    return;
  }
  real* product = room(workspace().product, M * N);
  if (K == 0) {
    std::fill_n(product, M * N, real(0));
  } else {
    gemm_blocks(product, N, a, b, M, K, N);
  }
  const Batch alpha(into.alpha);
  for (int64_t i = 0; i < M; ++i) {
    map(
        c + i * ldc, N, [&](Batch out, Batch t, Batch) { return simd::fma(alpha, t, out); },
        c + i * ldc, product + i * N);
  }
}

// Two threads or more share the longer side of c: column panels when N ≥ M,
// else whole row tiles. Each entry is still one FMA chain in k order on one
// thread, so the split changes no bit.
void gemm(real* c, int64_t ldc, MatrixRef a, MatrixRef b, int64_t M, int64_t K, int64_t N,
          GemmInto into) {
  if (M == 0 || N == 0) return;
  const bool by_columns = N >= M;
  const int64_t unit = by_columns ? kPanelWidth : kMaxTileRows;
  const int64_t extent = by_columns ? N : M;
  const int64_t units = (extent + unit - 1) / unit;
  parallel::parallel_for(units, M * K * N, [&](int64_t begin, int64_t end) {
    const int64_t from = begin * unit, to = std::min(extent, end * unit);
    if (by_columns) {
      gemm_serial(c + from, ldc, a, block(b, 0, from), M, K, to - from, into);
    } else {
      gemm_serial(c + from * ldc, ldc, block(a, from, 0), b, to - from, K, N, into);
    }
  });
}

GemmBlocking gemm_blocking() {
  const Blocks& sizes = blocks();
  const int64_t limit = in_place_limit.load();
  return {kMaxTileRows, kPanelWidth, sizes.kc, sizes.mc, sizes.nc, limit < 0 ? sizes.in_l1 : limit};
}

void set_gemm_in_place_limit(int64_t bytes) { in_place_limit.store(bytes < 0 ? -1 : bytes); }

#else  // ATTOGRAD_USE_SIMD off: kernels::gemm is scalar::gemm (tensor/kernels.hpp).

void gemm_serial(real* c, int64_t ldc, MatrixRef a, MatrixRef b, int64_t M, int64_t K, int64_t N,
                 GemmInto into) {
  scalar::gemm(c, ldc, a, b, M, K, N, into);
}
// The triple loop takes one entry, one k, at a time: tiles and blocks of 1
// (the tests step through the remainders of these).
GemmBlocking gemm_blocking() { return {1, 1, 1, 1, 1, 0}; }
void set_gemm_in_place_limit(int64_t) {}

#endif

}  // namespace attograd::kernels
