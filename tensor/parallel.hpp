// tensor/parallel.hpp — a small thread pool for the large matrix products.
//
// The kernels stay single-threaded loops; parallel_for hands disjoint ranges
// of *output rows* (or of batches) to the threads. Each output element is then
// computed by exactly one thread, with exactly the summation order it would
// have on one thread, so results are bitwise identical for every thread count
// and every run — threading changes the speed, never a number.
//
//   parallel::set_num_threads(2);               // or ATTOGRAD_NUM_THREADS=2
//   parallel::parallel_for(rows, rows * K * N,  // work: multiply-adds in total
//                          [&](int64_t begin, int64_t end) { /* rows [begin, end) */ });
//
// Waking a thread costs a few microseconds, so work below min_parallel_work()
// multiply-adds runs on the calling thread. A parallel_for started from
// inside another one (a batched product whose batches each call the matrix
// kernel) runs serially in the thread that reached it.
#pragma once

#include <cstdint>
#include <functional>

namespace attograd::parallel {

// How many threads parallel_for uses (≥ 1, the caller included). The first
// call reads the environment variable ATTOGRAD_NUM_THREADS (a positive
// integer); without it, std::thread::hardware_concurrency().
int num_threads();
// Sets the thread count (n ≥ 1; 1 turns threading off). Not to be called
// while a parallel_for is running.
void set_num_threads(int n);

// Work (multiply-adds) from which parallel_for splits; smaller jobs stay on
// the calling thread. The default, 2^19, is where splitting a product starts
// to pay for waking a worker (tensor/parallel.cpp has the measurements).
int64_t min_parallel_work();
void set_min_parallel_work(int64_t work);

// Calls body(begin, end) on contiguous, disjoint ranges that cover
// [0, count) — one per thread, the i-th being [count·i/n, count·(i+1)/n) — and
// returns when all are done. Runs body(0, count) on the calling thread when
// count < 2, work < min_parallel_work(), num_threads() is 1, or it is called
// from inside another parallel_for. An exception thrown by body is rethrown
// here once every range has finished.
void parallel_for(int64_t count, int64_t work, const std::function<void(int64_t, int64_t)>& body);

}  // namespace attograd::parallel
