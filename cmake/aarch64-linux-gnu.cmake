# cmake/aarch64-linux-gnu.cmake — cross-compiling attograd for 64-bit ARM
# Linux (aarch64, NEON) on a Debian 12 x86-64 machine, and running what it
# builds under qemu-user. scripts/test_aarch64.sh installs what it needs and
# uses it:
#
#   cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
#
# The compiler is Debian's g++-aarch64-linux-gnu; the libraries are the arm64
# -dev packages installed beside the host's (dpkg --add-architecture arm64),
# in /usr/lib/aarch64-linux-gnu. CTest, catch_discover_tests and the tests
# that start the example programs go through qemu-aarch64
# (CMAKE_CROSSCOMPILING_EMULATOR), which finds the arm64 loader and
# libraries in their multiarch folders.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64)

# Libraries and packages from the target's folders only; programs (pkg-config,
# the emulator) from the host's.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)

# xsimd is header-only, and Debian's libxsimd-dev is installed for the host
# alone: its CMake config sits in the x86-64 library folder.
set(xsimd_DIR /usr/lib/x86_64-linux-gnu/cmake/xsimd CACHE PATH "xsimd's CMake config")

# No -march=native on a machine of another architecture: the library is built
# for ARMv8-A, whose NEON (Advanced SIMD) every aarch64 core has.
set(ATTOGRAD_NATIVE OFF CACHE BOOL "")
