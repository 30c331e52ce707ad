// tensor/parallel.hpp — a small thread pool for the large matrix products.
//
// The kernels stay single-threaded loops; parallel_for cuts [0, count) into
// contiguous chunks of *output rows* (or of batches, or of replicas) and the
// threads claim the chunks one at a time. Each output element is then
// computed by exactly one thread, with exactly the summation order it would
// have on one thread, so results are bitwise identical for every thread count
// and every run — threading changes the speed, never a number.
//
//   parallel::set_num_threads(2);               // or ATTOGRAD_NUM_THREADS=2
//   parallel::parallel_for(rows, rows * K * N,  // work: multiply-adds in total
//                          [&](int64_t begin, int64_t end) { /* rows [begin, end) */ });
//
// A second thread never waits on a first: the calling thread claims chunks
// too, so if the other cores are busy and a worker does not run for a whole
// scheduler time slice, the caller simply runs every chunk itself, and the
// job takes what it takes on one thread. Work below min_parallel_work()
// multiply-adds (where even a prompt wake-up would not pay) runs on the
// calling thread. A parallel_for started from inside another one (a batched
// product whose batches each call the matrix kernel) runs serially in the
// thread that reached it. tensor/parallel.cpp has the pool.
#pragma once

#include <cstdint>
#include <functional>

namespace attograd::parallel {

// How many threads parallel_for uses (≥ 1, the caller included). The first
// call reads the environment variable ATTOGRAD_NUM_THREADS (a positive
// integer); without it, std::thread::hardware_concurrency().
int num_threads();
// Sets the thread count (n ≥ 1; 1 turns threading off). A count other than
// the pool's starts a new pool, which has learnt nothing of the machine yet.
// Not to be called while a parallel_for is running.
void set_num_threads(int n);

// Work (multiply-adds) from which parallel_for splits; smaller jobs stay on
// the calling thread. The default, 2^19, is where splitting a product starts
// to pay for waking a worker (tensor/parallel.cpp has the measurements).
int64_t min_parallel_work();
void set_min_parallel_work(int64_t work);

// A split job is cut into chunk_count(count, work) chunks, the i-th being
// [count·i/c, count·(i+1)/c): one per kChunkWork multiply-adds, at least 2,
// at most kMaxChunks and at most count. The chunks depend on the job alone,
// never on the thread count or on which thread runs which.
constexpr int64_t kChunkWork = int64_t{1} << 17;
constexpr int64_t kMaxChunks = 64;
int64_t chunk_count(int64_t count, int64_t work);

// Calls body(begin, end) on the chunks above, which cover [0, count), each
// on whichever thread claims it (the calling thread included), and returns
// when all are done. After jobs its workers did not help (late, or taken off
// a busy core mid-chunk), the pool runs jobs of that size on the caller
// alone, chunk after chunk, for a while (1 ms, doubling up to 1 s;
// tensor/parallel.cpp). Runs body(0, count) on the calling thread when
// count < 2, work < min_parallel_work(), num_threads() is 1, another thread's
// parallel_for is running, or it is called from inside another parallel_for.
// An exception thrown by body is rethrown here once the chunks already
// started have finished; the chunks not started by then are skipped.
void parallel_for(int64_t count, int64_t work, const std::function<void(int64_t, int64_t)>& body);

}  // namespace attograd::parallel
