#include "tensor/tensor.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <vector>

#include "tensor/fast/pool.hpp"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

namespace attograd {

// ---- The storage cache ---------------------------------------------------------

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

Storage::Storage(int64_t size) : size_(size) {
  check(size >= 0, "Storage: negative size {}", size);
  if (size == 0) return;
  check(static_cast<uint64_t>(size) <= (uint64_t(1) << 60) / sizeof(real),
        "Storage: {} elements are more than any machine can hold", size);
  const SizeClass size_class_of_block = size_class(static_cast<size_t>(size) * sizeof(real));
  data_ = static_cast<real*>(StorageCache::instance().take(size_class_of_block));
}

Storage::~Storage() {
  if (data_ == nullptr) return;
  if (cache_closed) {
    std::free(data_);
    return;
  }
  StorageCache::instance().give(data_, size_class(static_cast<size_t>(size_) * sizeof(real)));
}

int64_t Storage::cached_bytes() {
  return cache_closed ? 0 : StorageCache::instance().cached_bytes();
}

int64_t Storage::cache_limit_bytes() { return static_cast<int64_t>(kCacheLimitBytes); }

void Storage::release_cache() {
  if (!cache_closed) StorageCache::instance().release();
}

// ---- Tensor --------------------------------------------------------------------

Tensor Tensor::empty(const Shape& shape) {
  for (int64_t size : shape) {
    check(size >= 0, "empty: shape {} has a negative size", shape);
  }
  auto impl = make_pooled<TensorImpl>();
  impl->storage = make_pooled<Storage>(shape.numel());
  impl->shape = shape;
  contiguous_strides(shape, impl->strides);  // in place: no copy of fresh stores to read back
  return Tensor(std::move(impl));
}

void Tensor::throw_undefined() {
  fail(
      "Tensor: this tensor is undefined (default-constructed); create it with a factory "
      "such as zeros() first");
}

int64_t Tensor::size(int64_t axis) const { return shape()[normalize_axis("size", axis, dim())]; }

bool Tensor::is_contiguous() const {
  int64_t expected = 1;
  for (int64_t axis = dim() - 1; axis >= 0; --axis) {
    if (shape()[axis] != 1 && strides()[axis] != expected) return false;
    expected *= shape()[axis];
  }
  return true;
}

static int64_t element_offset(const Tensor& t, const std::vector<int64_t>& index) {
  check(static_cast<int64_t>(index.size()) == t.dim(),
        "at: index has {} entries but the tensor of shape {} has {} dims", index.size(), t.shape(),
        t.dim());
  int64_t position = t.offset();
  for (int64_t axis = 0; axis < t.dim(); ++axis) {
    const int64_t i = index[axis];
    check(i >= 0 && i < t.shape()[axis], "at: index {} out of range for axis {} of size {}", i,
          axis, t.shape()[axis]);
    position += i * t.strides()[axis];
  }
  return position;
}

real Tensor::at(const std::vector<int64_t>& index) const {
  return storage()->data()[element_offset(*this, index)];
}

void Tensor::set(const std::vector<int64_t>& index, real value) {
  storage()->data()[element_offset(*this, index)] = value;
}

real Tensor::item() const {
  check(numel() == 1,
        "item: tensor of shape {} has {} elements; item() needs exactly one (reduce it first, "
        "e.g. with sum)",
        shape(), numel());
  return *data();
}

std::vector<real> Tensor::to_vector() const {
  std::vector<real> values(numel());
  const real* base = storage()->data();
  for_each_offset(shape(), strides(), offset(),
                  [&](int64_t i, int64_t position) { values[i] = base[position]; });
  return values;
}

Tensor Tensor::contiguous_data() const {
  if (!is_contiguous()) return clone_data();
  const TensorImpl& self = impl();
  // A plain tensor (nothing attached) is already what is asked for.
  if (!self.attachment) return *this;
  // Otherwise share the data, but not what is attached to it.
  auto view = make_pooled<TensorImpl>();
  view->storage = self.storage;
  view->offset = self.offset;
  view->shape = self.shape;
  view->strides = contiguous_strides(self.shape);
  return Tensor(std::move(view));
}

namespace {

// dst[j] = src[j] for j < count ≤ 16: fixed-size moves the compiler emits
// inline (a loop here would be turned back into a memcpy call).
void copy_short_row(real* dst, const real* src, int64_t count) {
  constexpr int64_t kChunk = 32 / static_cast<int64_t>(sizeof(real));  // 32 bytes
  int64_t j = 0;
  for (; j + kChunk <= count; j += kChunk) std::memcpy(dst + j, src + j, kChunk * sizeof(real));
  for (; j < count; ++j) std::memcpy(dst + j, src + j, sizeof(real));
}

}  // namespace

Tensor Tensor::clone_data() const {
  Tensor out = empty(shape());
  real* dst = out.data();
  const real* base = storage()->data();
  if (is_contiguous()) {
    if (numel() > 0) std::memcpy(dst, data(), sizeof(real) * numel());
  } else {
    // Rows of a few values (a head's 8 of a permuted attention tensor) are
    // copied inline: a memcpy call per row costs more than the row.
    for_each_row(shape(), strides(), offset(),
                 [&](int64_t i, int64_t position, int64_t count, int64_t stride) {
                   if (stride == 1 && count > 16) {
                     std::memcpy(dst + i, base + position, sizeof(real) * count);
                   } else if (stride == 1) {
                     copy_short_row(dst + i, base + position, count);
                   } else {
                     for (int64_t j = 0; j < count; ++j) dst[i + j] = base[position + j * stride];
                   }
                 });
  }
  return out;
}

Tensor Tensor::as_strided(const Shape& new_shape, const Strides& new_strides,
                          int64_t new_offset) const {
  check(new_shape.size() == new_strides.size(), "as_strided: shape {} has {} dims but {} strides",
        new_shape, new_shape.size(), new_strides.size());
  if (new_shape.numel() > 0) {
    // The first and last elements the view can reach must lie inside the storage.
    int64_t lowest = new_offset, highest = new_offset;
    for (size_t axis = 0; axis < new_shape.size(); ++axis) {
      const int64_t reach = (new_shape[axis] - 1) * new_strides[axis];
      (reach < 0 ? lowest : highest) += reach;
    }
    check(lowest >= 0 && highest < storage()->size(),
          "as_strided: a view of shape {} with strides {} at offset {} reaches elements {}..{}, "
          "outside the storage of {} elements",
          new_shape, Shape(new_strides), new_offset, lowest, highest, storage()->size());
  }
  auto view = make_pooled<TensorImpl>();
  view->storage = impl().storage;
  view->offset = new_offset;
  view->shape = new_shape;
  view->strides = new_strides;
  return Tensor(std::move(view));
}

void Tensor::fill_(real value) {
  real* base = storage()->data();
  for_each_row(shape(), strides(), offset(),
               [&](int64_t, int64_t position, int64_t count, int64_t stride) {
                 for (int64_t j = 0; j < count; ++j) base[position + j * stride] = value;
               });
}

void Tensor::copy_from(const Tensor& src) {
  check(src.shape() == shape(), "copy_from: source shape {} differs from destination shape {}",
        src.shape(), shape());
  if (numel() == 0) return;
  if (is_contiguous() && src.is_contiguous()) {  // one block; memmove, as the two may overlap
    std::memmove(data(), src.data(), sizeof(real) * static_cast<size_t>(numel()));
    return;
  }
  // Through a copy, so a source that overlaps this tensor is read before it is written.
  const std::vector<real> values = src.to_vector();
  real* base = storage()->data();
  for_each_offset(shape(), strides(), offset(),
                  [&](int64_t i, int64_t position) { base[position] = values[i]; });
}

}  // namespace attograd
