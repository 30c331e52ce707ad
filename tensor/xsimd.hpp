// tensor/xsimd.hpp — the one place attograd includes xsimd.
//
// GCC 12 at -O2/-O3 reports a false -Wmaybe-uninitialized inside xsimd 8.1's
// argument reduction for sin/cos (xsimd/math/xsimd_rem_pio2.hpp: an array
// filled by a loop the compiler cannot follow). The warning is in the library
// header, not in attograd, so it is silenced for this include only; every
// other warning stays on, and -Werror builds stay clean.
#pragma once

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <xsimd/xsimd.hpp>
#pragma GCC diagnostic pop
