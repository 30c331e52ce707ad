// tensor/fast/storage_cache.cpp — the cache of freed Storage blocks (see the header).
#include "tensor/fast/storage_cache.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdlib>
#include <mutex>
#include <new>
#include <vector>

#include "tensor/fast/pool.hpp"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

namespace attograd::storage {

namespace {

constexpr size_t kAlignment = 64;
constexpr size_t kCacheLimitBytes = size_t(256) << 20;

// A block's size class: its bytes rounded up to a multiple of 64 up to 1 KiB,
// then to a quarter of the power of two below it (1280, 1536, 1792, 2048,
// 2560, …), so a block is at most 25% larger than asked for. `index` numbers
// the classes 0, 1, 2, … for the free-list table.
struct SizeClass {
  size_t bytes;
  size_t index;
};

constexpr SizeClass size_class(size_t bytes) {
  if (bytes <= 1024) {
    const size_t rounded = std::max<size_t>(1, (bytes + kAlignment - 1) / kAlignment);
    return {rounded * kAlignment, rounded - 1};  // classes 0..15
  }
  const size_t power = std::bit_floor(bytes - 1);  // ≥ 1024
  const size_t step = power / 4;
  const size_t quarters = (bytes + step - 1) / step;                     // 5..8
  const size_t exponent = static_cast<size_t>(std::countr_zero(power));  // ≥ 10
  return {quarters * step, 16 + (exponent - 10) * 4 + (quarters - 5)};
}

constexpr size_t kClassCount = 16 + (64 - 10) * 4;

// The bytes of the blocks in class `index` (the inverse of size_class).
size_t class_bytes(size_t index) {
  if (index < 16) return (index + 1) * kAlignment;
  const size_t power = size_t(1) << (10 + (index - 16) / 4);
  return (5 + (index - 16) % 4) * (power / 4);
}

// AddressSanitizer cannot see inside the cache: to it a cached block is still
// allocated. Poisoning it while it waits makes a read or write through a
// stale pointer an error, as it would be after free().
void poison(void* block, size_t bytes) {
#if defined(__SANITIZE_ADDRESS__)
  ASAN_POISON_MEMORY_REGION(block, bytes);
#else
  (void)block;
  (void)bytes;
#endif
}

void unpoison(void* block, size_t bytes) {
#if defined(__SANITIZE_ADDRESS__)
  ASAN_UNPOISON_MEMORY_REGION(block, bytes);
#else
  (void)block;
  (void)bytes;
#endif
}

// Set when the cache has been destroyed at exit: a Storage that outlives it
// (a static tensor destroyed later) frees its block directly. A plain bool
// that is never destroyed itself.
constinit bool cache_closed = false;

// Each thread keeps the blocks it frees in a front of its own, without the
// mutex: any number per size class for classes up to kFrontLargestBytes, at
// most kFrontLimitBytes in all. A training step makes and frees the same
// sizes on the same thread, so every block goes round through the front; the
// shared lists behind it take only what overflows, and a thread's blocks when
// it ends. A front that held a fixed few blocks per class sent most of a
// step's blocks through the shared lists, and two threads training at once
// then waited on the mutex and took each other's blocks, cold in their caches.
constexpr size_t kFrontLargestBytes = size_t(16) << 20;
constexpr size_t kFrontClasses = size_class(kFrontLargestBytes).index + 1;
constexpr size_t kFrontLimitBytes = size_t(64) << 20;

struct Front {
  std::array<std::vector<void*>, kFrontClasses> blocks;
  size_t bytes = 0;

  // A block of the class, or null if the front has none.
  void* take(const SizeClass& size) {
    if (size.index >= kFrontClasses || blocks[size.index].empty()) return nullptr;
    void* block = blocks[size.index].back();
    blocks[size.index].pop_back();
    bytes -= size.bytes;
    unpoison(block, size.bytes);
    return block;
  }
  // Keeps the block if there is room for it.
  bool give(void* block, const SizeClass& size) {
    if (size.index >= kFrontClasses || bytes + size.bytes > kFrontLimitBytes) return false;
    try {
      blocks[size.index].push_back(block);
    } catch (const std::bad_alloc&) {
      return false;  // no room to remember it: the caller passes it on
    }
    bytes += size.bytes;
    poison(block, size.bytes);
    return true;
  }
  // Hands every block to `to` (the shared lists, or std::free), emptying the front.
  template <typename To>
  void drain(To&& to) {
    for (size_t index = 0; index < kFrontClasses; ++index) {
      for (void* block : blocks[index]) {
        unpoison(block, class_bytes(index));
        to(block, SizeClass{class_bytes(index), index});
      }
      blocks[index].clear();
    }
    bytes = 0;
  }
  ~Front();
};

// Set once this thread's front is destroyed (at thread exit): the thread's
// storages freed later still use the shared lists. A plain bool, like
// cache_closed.
thread_local bool front_closed = false;
thread_local Front front;

class StorageCache {
 public:
  static StorageCache& instance() {
    static StorageCache cache;
    return cache;
  }

  ~StorageCache() {
    release();
    cache_closed = true;
  }

  // A block of the class's bytes, from this thread's front or the shared free
  // list when they have one.
  void* take(const SizeClass& size) {
    if (pool::pooling()) {
      if (!front_closed) {
        if (void* block = front.take(size)) return block;
      }
      std::lock_guard lock(mutex_);
      std::vector<void*>& list = free_lists_[size.index];
      if (!list.empty()) {
        void* block = list.back();
        list.pop_back();
        cached_bytes_ -= size.bytes;
        unpoison(block, size.bytes);
        return block;
      }
    }
    void* block = std::aligned_alloc(kAlignment, size.bytes);
    if (block == nullptr) {
      // Perhaps the cache holds what the system now lacks: give it back and retry.
      release();
      block = std::aligned_alloc(kAlignment, size.bytes);
      if (block == nullptr) throw std::bad_alloc();
    }
    return block;
  }

  // Keep the block for reuse, or free it if the cache is full.
  void give(void* block, const SizeClass& size) {
    if (pool::pooling()) {
      if (!front_closed && front.give(block, size)) return;
      give_shared(block, size);
      return;
    }
    std::free(block);
  }

  // Keep the block in the shared lists, or free it if they are full.
  void give_shared(void* block, const SizeClass& size) {
    {
      std::lock_guard lock(mutex_);
      if (cached_bytes_ + size.bytes <= kCacheLimitBytes) {
        try {
          free_lists_[size.index].push_back(block);
        } catch (const std::bad_alloc&) {
          std::free(block);  // no room to remember it: give it back instead
          return;
        }
        cached_bytes_ += size.bytes;
        poison(block, size.bytes);
        return;
      }
    }
    std::free(block);
  }

  // Frees the shared lists' blocks and this thread's front (other threads'
  // fronts are theirs: each holds at most kFrontLimitBytes).
  void release() {
    if (!front_closed) front.drain([](void* block, const SizeClass&) { std::free(block); });
    std::lock_guard lock(mutex_);
    for (size_t index = 0; index < kClassCount; ++index) {
      std::vector<void*>& list = free_lists_[index];
      for (void* block : list) {
        unpoison(block, class_bytes(index));
        std::free(block);
      }
      list.clear();
      list.shrink_to_fit();
    }
    cached_bytes_ = 0;
  }

  // The shared lists' bytes and this thread's front's.
  int64_t cached_bytes() {
    std::lock_guard lock(mutex_);
    return static_cast<int64_t>(cached_bytes_ + (front_closed ? 0 : front.bytes));
  }

 private:
  StorageCache() = default;

  std::mutex mutex_;
  std::array<std::vector<void*>, kClassCount> free_lists_;
  size_t cached_bytes_ = 0;
};

Front::~Front() {
  front_closed = true;
  drain([](void* block, const SizeClass& size) {
    if (cache_closed) {
      std::free(block);
    } else {
      StorageCache::instance().give_shared(block, size);
    }
  });
}

}  // namespace

void* allocate(size_t bytes) { return StorageCache::instance().take(size_class(bytes)); }

void deallocate(void* block, size_t bytes) noexcept {
  if (cache_closed) {
    std::free(block);
    return;
  }
  StorageCache::instance().give(block, size_class(bytes));
}

int64_t cached_bytes() { return cache_closed ? 0 : StorageCache::instance().cached_bytes(); }

int64_t cache_limit_bytes() { return static_cast<int64_t>(kCacheLimitBytes); }

void release_cache() {
  if (!cache_closed) StorageCache::instance().release();
}

}  // namespace attograd::storage
