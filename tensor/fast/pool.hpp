// tensor/fast/pool.hpp — recycling the small objects every op makes.
//
// The plain algorithm is std::make_shared, std::vector and std::function.
// But an op makes a handful of small heap objects — the output's TensorImpl
// and Storage, a graph Node, its list of inputs, its backward closure — and
// backward() frees them all again a few microseconds later. On a graph of
// small tensors (the kernel-regression example's are 50×49) malloc and free
// then cost as much as the arithmetic. The core reaches this file through
// three names, each the plain type with its blocks from the pool:
//
//   make_object<T>(args…)   std::make_shared<T>(args…)
//   ObjectVector<T>         std::vector<T>
//   SharedFunction<R(A…)>   std::function<R(A…)> (copies share one callable)
//
// The pool is a free list kept per thread and per 16-byte size class:
// freeing a block pushes it on the list of the thread that frees it,
// allocating pops one. The lists hold at most a few thousand blocks each; the
// rest, and every block at thread exit, go back to the system.
//
// What it saves: NW's 100 epochs take 0.21 ms with the pool and the storage
// cache on and 0.31 ms with both off (`build/bench/bench_nw_regression 201
// --rounds 3` prints both; AMD EPYC Zen 5, 2 vCPU, AVX-512, Debian 12,
// g++ 12; docs/fast_paths.md).
//
// Switch: pool::set_pooling(false), or the reference path's guard
// (autograd/fast/fast.hpp): every block then goes to and from the system.
// AddressSanitizer builds never pool.
#pragma once

#include <cstddef>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

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
// (tensor/fast/storage_cache.hpp). Blocks move safely between the two
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

template <typename T>
using ObjectAllocator = pool::Allocator<T>;

template <typename T, typename... Args>
std::shared_ptr<T> make_object(Args&&... args) {
  return std::allocate_shared<T>(ObjectAllocator<T>(), std::forward<Args>(args)...);
}

template <typename T>
using ObjectVector = std::vector<T, ObjectAllocator<T>>;

template <typename Signature>
class SharedFunction;

// What std::function<R(Args…)> would be, except that the callable and
// everything it captures live in one pooled block rather than in a heap
// block of their own, and copies share the callable. A callable may also
// return a container whose elements R can be built from (R(begin, end)).
template <typename R, typename... Args>
class SharedFunction<R(Args...)> {
 public:
  SharedFunction() = default;
  SharedFunction(std::nullptr_t) {}  // NOLINT(google-explicit-constructor): `f = nullptr`
  template <typename F,
            typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, SharedFunction> &&
                                        !std::is_same_v<std::decay_t<F>, std::nullptr_t>>>
  SharedFunction(
      F&& f)  // NOLINT(google-explicit-constructor): a lambda converts, as to std::function
      : callable_(make_object<Holder<std::decay_t<F>>>(std::forward<F>(f))) {}

  R operator()(Args... args) const { return callable_->call(std::forward<Args>(args)...); }
  explicit operator bool() const { return callable_ != nullptr; }

 private:
  struct Callable {
    virtual ~Callable() = default;
    virtual R call(Args... args) = 0;
  };
  template <typename F>
  struct Holder final : Callable {
    explicit Holder(F function) : function(std::move(function)) {}
    R call(Args... args) override {
      if constexpr (std::is_convertible_v<std::invoke_result_t<F&, Args...>, R>) {
        return function(std::forward<Args>(args)...);
      } else {
        auto values = function(std::forward<Args>(args)...);
        return R(values.begin(), values.end());
      }
    }
    F function;
  };

  std::shared_ptr<Callable> callable_;
};

}  // namespace attograd
