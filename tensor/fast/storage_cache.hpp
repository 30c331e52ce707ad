// tensor/fast/storage_cache.hpp — where a Storage gets its block, and where
// the block goes when the Storage dies.
//
// The plain algorithm is aligned_alloc and free. Every op result and every
// gradient is a new Storage, so a training step allocates and frees the same
// few sizes again and again; this cache keeps freed blocks, one free list per
// size class (sizes rounded up to a multiple of 64 bytes up to 1 KiB, then to
// a quarter of a power of two), and hands them out again to the next Storage
// of that class, without a call to malloc and without page faults for large
// blocks. Each thread keeps the blocks it frees in a front of its own (every
// class up to 16 MiB, 64 MiB at most), taken back without a lock; behind the
// fronts, shared lists of at most 256 MiB behind a mutex take what overflows,
// and a thread's front when it ends.
//
// What it saves: NW's 100 epochs take 0.21 ms with the pool and the cache on
// and 0.31 ms with both off (`build/bench/bench_nw_regression 201 --rounds 3`
// prints both; AMD EPYC Zen 5, 2 vCPU, AVX-512, Debian 12, g++ 12; docs/fast_paths.md).
//
// Switch: pool::set_pooling(false) (tensor/fast/pool.hpp), or the reference
// path's guard (autograd/fast/fast.hpp): every block then comes from
// aligned_alloc and goes back to free. AddressSanitizer builds poison cached
// blocks, so a use after free is still caught.
#pragma once

#include <cstddef>
#include <cstdint>

namespace attograd::storage {

// A block of at least `bytes` bytes, aligned to 64 bytes.
void* allocate(size_t bytes);
// Gives back a block from allocate(bytes), with the same `bytes`.
void deallocate(void* block, size_t bytes) noexcept;

// Bytes of freed blocks the cache holds now, waiting to be reused: the
// shared lists' and the calling thread's own.
int64_t cached_bytes();
// The most the shared lists keep: 256 MiB (each thread's own, 64 MiB more).
int64_t cache_limit_bytes();
// Return the shared lists' blocks and the calling thread's own to the system
// (e.g. after a large job).
void release_cache();

}  // namespace attograd::storage
