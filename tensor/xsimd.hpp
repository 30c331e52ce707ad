// tensor/xsimd.hpp — the one place attograd includes xsimd.
//
// GCC 12 at -O2/-O3 reports two kinds of false warnings from code this
// include brings in, so both are silenced for this include only; every other
// warning stays on, and -Werror builds stay clean:
//  - -Wmaybe-uninitialized inside xsimd 8.1's argument reduction for sin/cos
//    (xsimd/math/xsimd_rem_pio2.hpp: an array filled by a loop the compiler
//    cannot follow);
//  - -Wuninitialized inside GCC's own AVX-512 intrinsics (avx512fintrin.h:
//    `_mm512_undefined_ps` and friends initialise a variable with itself on
//    purpose; GCC bug 105593, fixed in GCC 13). Only -march=native on an
//    AVX-512 machine compiles them. The pragmas reach them only because
//    <immintrin.h> is first included here: no file may include it, or a
//    header that does, before this one.
#pragma once

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <xsimd/xsimd.hpp>
#pragma GCC diagnostic pop

#include <type_traits>

namespace attograd::simd {

// x · y + z rounded once, on every instruction set. xsimd 8.1's fma has
// fused versions for SSE and AVX (FMA3) but none for AVX-512, where it falls
// back to x * y + z: two roundings, unless the compiler happens to contract
// them (it did at -O3, not in the -O2 sanitizer build). The kernels rely on a
// single rounding — exp_nonpositive's range reduction, and bmm and the
// weight-gradient kernels adding exactly what matmul adds — so on AVX-512
// this calls the fused instruction itself.
template <typename T, typename A>
xsimd::batch<T, A> fma(const xsimd::batch<T, A>& x, const xsimd::batch<T, A>& y,
                       const xsimd::batch<T, A>& z) {
#if defined(__AVX512F__)
  if constexpr (std::is_base_of_v<xsimd::avx512f, A>) {
    if constexpr (std::is_same_v<T, float>) {
      return _mm512_fmadd_ps(x, y, z);
    } else {
      return _mm512_fmadd_pd(x, y, z);
    }
  } else {
    return xsimd::fma(x, y, z);
  }
#else
  return xsimd::fma(x, y, z);
#endif
}

}  // namespace attograd::simd
