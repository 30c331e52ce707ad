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
