// tensor/xsimd.hpp — the one place attograd includes xsimd, and the
// correctly rounded division and square root the kernels use in place of
// xsimd 8.1's float ones on ARM64 (simd::div, simd::sqrt, at the end).
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

namespace attograd::kernels::simd {

// x / y and √x rounded correctly, as IEEE-754 and the scalar loops round
// them, on every instruction set. xsimd 8.1 uses ARM64's division and square
// root instructions for double only: for float (on neon64 as on 32-bit NEON)
// it divides by a reciprocal estimate refined by two Newton steps and takes
// √x through a refined reciprocal-square-root estimate, one unit in the last
// place off for a good share of inputs. The kernels that promise IEEE-754's
// result (÷ and √ in the unary and binary kernels, Adam's step, the softmax
// and attention normalisations) call these instead of `/` and xsimd::sqrt.
template <typename T, typename A>
xsimd::batch<T, A> div(const xsimd::batch<T, A>& x, const xsimd::batch<T, A>& y) {
#if defined(__aarch64__)
  if constexpr (std::is_same_v<T, float> && std::is_base_of_v<xsimd::neon64, A>) {
    return vdivq_f32(x, y);
  }
#endif
  return x / y;
}

template <typename T, typename A>
xsimd::batch<T, A> sqrt(const xsimd::batch<T, A>& x) {
#if defined(__aarch64__)
  if constexpr (std::is_same_v<T, float> && std::is_base_of_v<xsimd::neon64, A>) {
    return vsqrtq_f32(x);
  }
#endif
  return xsimd::sqrt(x);
}

}  // namespace attograd::kernels::simd
