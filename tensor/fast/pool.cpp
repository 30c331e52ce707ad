#include "tensor/fast/pool.hpp"

#include <new>

namespace attograd::pool {

namespace {

constexpr size_t kGranule = 16;               // size classes 16, 32, …, 512 bytes
constexpr size_t kClassCount = 32;            // larger blocks are not pooled
constexpr size_t kMostBlocksPerClass = 4096;  // beyond this, a freed block goes back

// AddressSanitizer must see every free to catch a use after it: there,
// every block goes straight to the system.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kPooling = false;
#else
constexpr bool kPooling = true;
#endif

struct FreeBlock {
  FreeBlock* next;
};

struct FreeLists {
  FreeBlock* head[kClassCount] = {};
  size_t count[kClassCount] = {};
  ~FreeLists();
};

// Set once this thread's lists are destroyed (at thread exit): a tensor freed
// later still (a static one, at program exit) goes straight to the system.
// A plain bool needs no destructor, so it outlives the lists.
thread_local bool lists_closed = false;
thread_local FreeLists lists;
// The switch (pool::set_pooling): off, every block goes to and from the system.
thread_local bool pooling_on = true;

FreeLists::~FreeLists() {
  lists_closed = true;
  for (size_t c = 0; c < kClassCount; ++c) {
    while (head[c] != nullptr) {
      FreeBlock* block = head[c];
      head[c] = block->next;
      ::operator delete(block);
    }
  }
}

// The class of a block of `bytes`, or kClassCount if it is too large to pool.
size_t class_of(size_t bytes) {
  return bytes == 0 ? 0 : bytes > kGranule * kClassCount ? kClassCount : (bytes - 1) / kGranule;
}

}  // namespace

void* allocate(size_t bytes) {
  const size_t c = class_of(bytes);
  if (c == kClassCount) return ::operator new(bytes);
  // Always the class's full size, even when the lists are not used: the block
  // may be freed on another thread whose lists take it, and then serve any
  // request of its class.
  if (!kPooling || !pooling_on || lists_closed) return ::operator new((c + 1) * kGranule);
  if (FreeBlock* block = lists.head[c]) {
    lists.head[c] = block->next;
    --lists.count[c];
    return block;
  }
  return ::operator new((c + 1) * kGranule);
}

void deallocate(void* block, size_t bytes) noexcept {
  const size_t c = class_of(bytes);
  if (!kPooling || !pooling_on || c == kClassCount || lists_closed ||
      lists.count[c] >= kMostBlocksPerClass) {
    ::operator delete(block);
    return;
  }
  auto* free_block = static_cast<FreeBlock*>(block);
  free_block->next = lists.head[c];
  lists.head[c] = free_block;
  ++lists.count[c];
}

bool enabled() { return kPooling; }

bool pooling() { return pooling_on; }
void set_pooling(bool on) { pooling_on = on; }

size_t cached_blocks() {
  if (lists_closed) return 0;
  size_t total = 0;
  for (size_t c = 0; c < kClassCount; ++c) total += lists.count[c];
  return total;
}

}  // namespace attograd::pool
