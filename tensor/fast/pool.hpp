// tensor/fast/pool.hpp — recycling the small objects every op makes.
//
// An op makes a handful of small heap objects — the output's TensorImpl and
// Storage, a graph Node — and backward() frees them all again a few
// microseconds later. On a graph of small tensors (the kernel-regression
// example's are 50×49) malloc and free then cost as much as the arithmetic.
// make_pooled<T>(args…) is std::make_shared<T>(args…) whose memory comes
// from a free list kept per thread and per 16-byte size class: freeing a
// block pushes it on the list of the thread that frees it, allocating pops
// one. The lists hold at most a few thousand blocks each; the rest, and
// every block at thread exit, go back to the system.
#pragma once

#include <cstddef>
#include <memory>
#include <utility>

namespace attograd {

namespace pool {

// A block of at least `bytes` bytes (aligned for any ordinary type).
void* allocate(size_t bytes);
// Give back a block from allocate(bytes), with the same `bytes`.
void deallocate(void* block, size_t bytes) noexcept;
// Blocks waiting on this thread's free lists (for tests).
size_t cached_blocks();
// False in AddressSanitizer builds, where every block goes to the system so
// that a use after free is still caught.
bool enabled();
// The switch of this thread (on by default): off, allocate and deallocate go
// straight to the system, and so do the blocks of new and freed Storages
// (the storage cache, tensor/tensor.cpp). Blocks move safely between the two
// modes. The reference path of the layers above turns it off.
bool pooling();
void set_pooling(bool on);

// The allocator std::allocate_shared uses to place an object and its
// reference counts in one pooled block.
template <typename T>
struct Allocator {
  using value_type = T;
  Allocator() = default;
  template <typename U>
  Allocator(const Allocator<U>&) noexcept {}  // NOLINT(google-explicit-constructor): rebinding
  T* allocate(size_t n) { return static_cast<T*>(pool::allocate(n * sizeof(T))); }
  void deallocate(T* p, size_t n) noexcept { pool::deallocate(p, n * sizeof(T)); }
  template <typename U>
  bool operator==(const Allocator<U>&) const noexcept {
    return true;
  }
};

}  // namespace pool

template <typename T, typename... Args>
std::shared_ptr<T> make_pooled(Args&&... args) {
  return std::allocate_shared<T>(pool::Allocator<T>(), std::forward<Args>(args)...);
}

}  // namespace attograd
