#include "tensor/tensor.hpp"

#include <unistd.h>  // sysconf: the machine's memory

#include <cstring>
#include <limits>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "tensor/fast/storage_cache.hpp"  // storage::allocate, storage::deallocate

namespace attograd {

// ---- Storage -------------------------------------------------------------------

Storage::Storage(int64_t size) : size_(size) {
  check(size >= 0, "Storage: negative size {}", size);
  if (size == 0) return;
  check(static_cast<uint64_t>(size) <= (uint64_t(1) << 60) / sizeof(real),
        "Storage: {} elements are more than any machine can hold", size);
  data_ = static_cast<real*>(storage::allocate(static_cast<size_t>(size) * sizeof(real)));
}

Storage::~Storage() {
  if (data_ != nullptr) storage::deallocate(data_, static_cast<size_t>(size_) * sizeof(real));
}

// ---- Tensor --------------------------------------------------------------------

namespace {

// The most elements a tensor may have: as many as fill the machine's physical
// memory (no limit when the system does not say), read once. A tensor larger
// than that could never be held in memory, so Tensor::empty throws before the
// allocator is asked: with overcommit the allocator may say yes and the first
// write kill the process, and AddressSanitizer aborts on such sizes instead
// of failing.
struct MemoryLimit {
  uint64_t bytes = 0;  // 0: unknown
  uint64_t elements = std::numeric_limits<uint64_t>::max();
};

const MemoryLimit& memory_limit() {
  static const MemoryLimit limit = [] {
    const long pages = sysconf(_SC_PHYS_PAGES);
    const long page_size = sysconf(_SC_PAGE_SIZE);
    MemoryLimit known;
    if (pages > 0 && page_size > 0) {
      known.bytes = uint64_t(pages) * uint64_t(page_size);
      known.elements = known.bytes / sizeof(real);
    }
    return known;
  }();
  return limit;
}

// "4398046511104 bytes (4096.0 GiB)", exact while the count fits in 64 bits.
std::string bytes_text(uint64_t numel) {
  const double gib = double(numel) * double(sizeof(real)) / double(uint64_t(1) << 30);
  if (numel > std::numeric_limits<uint64_t>::max() / sizeof(real)) {
    return fmt::format("{:.1f} GiB", gib);
  }
  return fmt::format("{} bytes ({:.1f} GiB)", numel * sizeof(real), gib);
}

[[noreturn]] void fail_allocation(const Shape& shape, uint64_t numel, std::string_view caller,
                                  std::string_view why) {
  fail(
      "{}: allocating a tensor of shape {}: {} asked for, {}; use a smaller shape (a smaller "
      "size flag, batch or model) or a machine with more memory",
      caller, shape, bytes_text(numel), why);
}

}  // namespace

Tensor Tensor::empty(const Shape& shape, const char* caller) {
  for (int64_t size : shape) {
    check(size >= 0, "empty: shape {} has a negative size", shape);
  }
  const int64_t numel = shape.numel();  // throws on overflow
  const MemoryLimit& limit = memory_limit();
  if (uint64_t(numel) > limit.elements) {
    fail_allocation(shape, uint64_t(numel), caller,
                    fmt::format("more than this machine's {:.1f} GiB of memory",
                                double(limit.bytes) / double(uint64_t(1) << 30)));
  }
  auto impl = make_object<TensorImpl>();
  try {
    impl->storage = make_object<Storage>(numel);
  } catch (const std::bad_alloc&) {
    fail_allocation(shape, uint64_t(numel), caller, "more than the system would give");
  }
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
  auto view = make_object<TensorImpl>();
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
  auto view = make_object<TensorImpl>();
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
