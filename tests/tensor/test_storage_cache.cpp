// tests/tensor/test_storage_cache.cpp — the cache of freed Storage blocks.
//
// A freed block goes to its size class's free list and the next Storage of
// that class gets it back (the last freed first); blocks are 64-byte aligned
// whatever their size; the cache never holds more than its limit; threads
// may allocate and free concurrently, including blocks allocated on another
// thread; each thread keeps the blocks it frees (up to its front's limits),
// which go to the shared lists when it ends. Storage never promised zeroed values (zeros() fills),
// so that is not checked; what is checked is that a recycled block is writable in full.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "attograd.hpp"
#include "tensor/fast/pool.hpp"
#include "tensor/fast/storage_cache.hpp"

namespace test_storage_cache {

using namespace attograd;

namespace {

bool aligned_64(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 64 == 0; }

}  // namespace

TEST_CASE("storage cache: a freed block is handed to the next storage of its size class",
          "[storage]") {
  storage::release_cache();
  const real* first = nullptr;
  {
    Storage storage(1000);
    first = storage.data();
    storage.data()[999] = 1;
  }
  CHECK(storage::cached_bytes() > 0);
  {
    Storage again(1000);
    CHECK(again.data() == first);
    // 990 elements round up to the same class as 1000, so they reuse it too.
  }
  {
    Storage near(990);
    CHECK(near.data() == first);
    for (int64_t i = 0; i < near.size(); ++i) near.data()[i] = real(i);  // all of it is ours
    CHECK(near.data()[989] == real(989));
  }
  // A much larger storage is another class: it cannot get the small block.
  Storage larger(100000);
  CHECK(larger.data() != first);
  storage::release_cache();
  CHECK(storage::cached_bytes() == 0);
}

TEST_CASE("storage cache: two live storages never share a block", "[storage]") {
  std::vector<std::unique_ptr<Storage>> live;
  for (int i = 0; i < 64; ++i) live.push_back(std::make_unique<Storage>(17));
  for (size_t i = 0; i < live.size(); ++i) {
    for (size_t j = i + 1; j < live.size(); ++j) REQUIRE(live[i]->data() != live[j]->data());
  }
  live.clear();
  for (int i = 0; i < 64; ++i) live.push_back(std::make_unique<Storage>(17));
  for (size_t i = 0; i < live.size(); ++i) {
    for (size_t j = i + 1; j < live.size(); ++j) REQUIRE(live[i]->data() != live[j]->data());
  }
}

TEST_CASE("storage cache: blocks are 64-byte aligned at every size, new or reused", "[storage]") {
  for (int round = 0; round < 2; ++round) {  // the second round reuses the first's blocks
    for (int64_t size : {1, 7, 15, 16, 17, 255, 256, 257, 1000, 4097, 100000, 300000}) {
      Storage storage(size);
      CHECK(aligned_64(storage.data()));
      CHECK(storage.size() == size);
      storage.data()[size - 1] = 1;
    }
  }
  Storage empty(0);
  CHECK(empty.data() == nullptr);
  CHECK(empty.size() == 0);
  CHECK_THROWS_AS(Storage(-1), Error);
}

TEST_CASE("storage cache: holds at most its limit", "[storage]") {
  storage::release_cache();
  const int64_t block_bytes = int64_t(64) << 20;  // 64 MiB each
  const int64_t count = storage::cache_limit_bytes() / block_bytes + 2;
  {
    std::vector<std::unique_ptr<Storage>> live;
    for (int64_t i = 0; i < count; ++i) {
      live.push_back(std::make_unique<Storage>(block_bytes / int64_t(sizeof(real))));
    }
  }  // all freed: the cache keeps what fits and returns the rest
  CHECK(storage::cached_bytes() > 0);
  CHECK(storage::cached_bytes() <= storage::cache_limit_bytes());
  storage::release_cache();
  CHECK(storage::cached_bytes() == 0);
}

TEST_CASE("storage cache: threads allocate and free at once, and free each other's blocks",
          "[storage]") {
  constexpr int kThreads = 4;
  constexpr int kRounds = 2000;
  // Each thread fills its blocks with its own number and checks them before
  // freeing: a block handed to two threads at once would show the other's.
  std::vector<std::vector<std::unique_ptr<Storage>>> handed_over(kThreads);
  std::vector<int> failures(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &handed_over, &failures] {
      std::vector<std::unique_ptr<Storage>> mine;
      for (int round = 0; round < kRounds; ++round) {
        const int64_t size = 1 + (round * 37 + t * 11) % 3000;
        auto storage = std::make_unique<Storage>(size);
        if (!aligned_64(storage->data())) ++failures[t];
        for (int64_t i = 0; i < size; ++i) storage->data()[i] = real(t);
        mine.push_back(std::move(storage));
        if (mine.size() > 8) {
          for (int64_t i = 0; i < mine.front()->size(); ++i) {
            if (mine.front()->data()[i] != real(t)) ++failures[t];
          }
          mine.erase(mine.begin());
        }
      }
      handed_over[t] = std::move(mine);  // freed below by the main thread
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) {
    CHECK(failures[t] == 0);
    for (const auto& storage : handed_over[t]) {
      for (int64_t i = 0; i < storage->size(); ++i) REQUIRE(storage->data()[i] == real(t));
    }
  }
  handed_over.clear();  // blocks of other threads go into the shared cache
  CHECK(storage::cached_bytes() <= storage::cache_limit_bytes());
}

TEST_CASE("storage cache: a thread's own blocks go to the shared lists when it ends", "[storage]") {
  storage::release_cache();  // this thread's blocks and the shared lists': none left
  const real* freed_there = nullptr;
  std::thread worker([&] {
    Storage storage(1000);
    freed_there = storage.data();
  });  // freed into the worker's own blocks, handed over as the worker ends
  worker.join();
  CHECK(storage::cached_bytes() > 0);
  Storage here(1000);
  CHECK(here.data() == freed_there);
}

TEST_CASE("storage cache: a thread keeps the blocks it frees, and larger ones are shared",
          "[storage]") {
  storage::release_cache();
  std::vector<std::unique_ptr<Storage>> live;
  for (int i = 0; i < 40; ++i) live.push_back(std::make_unique<Storage>(1000));
  std::vector<const real*> blocks;
  for (const auto& storage : live) blocks.push_back(storage->data());
  live.clear();  // all 40 stay with this thread: a training step's blocks go round its front
  CHECK(storage::cached_bytes() >= 40 * 1000 * int64_t(sizeof(real)));
  // A block above the fronts' largest class (16 MiB) goes to the shared lists.
  const int64_t large = (int64_t(32) << 20) / int64_t(sizeof(real));
  const real* large_block = nullptr;
  {
    Storage storage(large);
    large_block = storage.data();
  }
  // Another thread gets none of the small ones, and the large one.
  int reused = 0;
  const real* large_there = nullptr;
  std::thread other([&] {
    for (int i = 0; i < 40; ++i) live.push_back(std::make_unique<Storage>(1000));
    for (const auto& storage : live) {
      reused += std::find(blocks.begin(), blocks.end(), storage->data()) != blocks.end();
    }
    live.clear();
    Storage storage(large);
    large_there = storage.data();
  });
  other.join();
  CHECK(reused == 0);
  CHECK(large_there == large_block);
  // This thread gets its own back, the last freed first.
  Storage again(1000);
  CHECK(again.data() == blocks.back());
  storage::release_cache();
  CHECK(storage::cached_bytes() == 0);
}

TEST_CASE("storage cache: zeros() is zero even in a recycled block", "[storage]") {
  {
    Tensor dirty = full({333}, 7.0);
    (void)dirty;
  }
  const Tensor clean = zeros({333});
  for (real value : clean.to_vector()) REQUIRE(value == 0);
}

// ---- The pool of small objects (tensor/fast/pool.hpp) ---------------------------------

TEST_CASE("pooled objects are recycled on the thread that frees them", "[tensor][pool]") {
  if (!pool::enabled()) return;  // AddressSanitizer build: every block goes to the system
  struct Small {
    int64_t a = 1, b = 2, c = 3;
  };
  auto first = make_object<Small>();
  const void* address = first.get();
  const size_t before = pool::cached_blocks();
  first.reset();
  CHECK(pool::cached_blocks() == before + 1);
  auto second = make_object<Small>();  // the same size class: the block just freed
  CHECK(static_cast<const void*>(second.get()) == address);
  CHECK(pool::cached_blocks() == before);
  CHECK(second->c == 3);
}

TEST_CASE("tensors made on one thread can be freed on another", "[tensor][pool]") {
  std::vector<Tensor> made;
  std::thread worker([&] {
    for (int i = 0; i < 100; ++i) made.push_back(full({3, 2}, real(i)));
  });
  worker.join();  // the worker's own free lists are gone now
  for (int i = 0; i < 100; ++i) CHECK(made[size_t(i)].at({2, 1}) == real(i));
  made.clear();  // the blocks go to this thread's lists (or the system)
  const Tensor fresh = full({3, 2}, real(7));
  CHECK(fresh.at({0, 0}) == 7);
}

}  // namespace test_storage_cache
