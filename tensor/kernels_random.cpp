// tensor/kernels_random.cpp — random masks from a counter-based hash: the
// scalar specification first, then the xsimd version that must equal it bit
// for bit (integer arithmetic rounds nothing).
//
// A dropout mask needs one random draw per element. Drawn one by one from
// the layer's std::mt19937_64, that was a tenth of the Transformer recipe's
// time. Here the layer draws one 64-bit seed per mask and element i's draw is
// a hash of (seed, i): murmur3's 32-bit finaliser of i·φ + the seed's low
// half, XORed with its high half first. The finaliser is a bijection whose
// every output bit depends on every input bit, so neighbouring elements get
// unrelated draws, and W elements are hashed at once.
#include <array>
#include <type_traits>

#include "tensor/kernels.hpp"
#include "tensor/kernels_simd.hpp"

namespace attograd::kernels {

namespace {

constexpr uint32_t kGolden = 0x9E3779B9u;  // 2^32 / φ, spreads consecutive counters

}  // namespace

namespace scalar {

uint32_t mask_draw(uint64_t seed, uint64_t index) {
  uint32_t h = static_cast<uint32_t>(index) * kGolden + static_cast<uint32_t>(seed);
  h ^= static_cast<uint32_t>(seed >> 32);
  h ^= h >> 16;
  h *= 0x85EBCA6Bu;
  h ^= h >> 13;
  h *= 0xC2B2AE35u;
  h ^= h >> 16;
  return h;
}

void dropout_mask(real* mask, int64_t n, uint32_t drop_below, real keep, uint64_t seed) {
  for (int64_t i = 0; i < n; ++i) {
    mask[i] = mask_draw(seed, static_cast<uint64_t>(i)) < drop_below ? real(0) : keep;
  }
}

}  // namespace scalar

#if ATTOGRAD_USE_SIMD

using namespace simd;

// The same hash on W counters at once in 32-bit lanes; a draw below the
// threshold selects 0, any other the kept value's bits. (Float builds: W
// floats fill exactly W 32-bit lanes. The double build, which is for checking
// gradients, runs the scalar loop.)
void dropout_mask(real* mask, int64_t n, uint32_t drop_below, real keep, uint64_t seed) {
  using Bits = xsimd::batch<uint32_t>;
  if constexpr (!std::is_same_v<real, float> || static_cast<int64_t>(Bits::size) != W) {
    scalar::dropout_mask(mask, n, drop_below, keep, seed);
  } else {
    alignas(64) std::array<uint32_t, W> first{};
    for (int64_t i = 0; i < W; ++i) first[static_cast<size_t>(i)] = static_cast<uint32_t>(i);
    const Bits offsets = Bits::load_aligned(first.data());
    const Bits low(static_cast<uint32_t>(seed)), high(static_cast<uint32_t>(seed >> 32));
    const Bits threshold(drop_below), kept = xsimd::bitwise_cast<Bits>(Batch(keep));
    auto masks = [&](int64_t start) {  // elements start … start + W − 1
      Bits h = (Bits(static_cast<uint32_t>(start)) + offsets) * Bits(kGolden) + low;
      h ^= high;
      h ^= h >> 16;
      h *= Bits(0x85EBCA6Bu);
      h ^= h >> 13;
      h *= Bits(0xC2B2AE35u);
      h ^= h >> 16;
      return xsimd::bitwise_cast<Batch>(xsimd::select(h < threshold, Bits(0u), kept));
    };
    int64_t i = 0;
    for (; i + W <= n; i += W) masks(i).store_unaligned(mask + i);
    if (i < n) store_partial(mask + i, masks(i), n - i);
  }
}

#endif  // ATTOGRAD_USE_SIMD; without it kernels::f is scalar::f (tensor/kernels.hpp)

}  // namespace attograd::kernels
