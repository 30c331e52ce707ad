// tests/support/thread_settings.hpp — a thread count and split threshold for
// one check, restored when it ends (so a failing check cannot leave the
// suite's later tests threaded differently).
#pragma once

#include <cstdint>

#include "tensor/parallel.hpp"

namespace attograd::testing {

class ThreadSettings {
 public:
  // The thread count alone; the split threshold stays as it is.
  explicit ThreadSettings(int threads) : ThreadSettings(threads, parallel::min_parallel_work()) {}
  ThreadSettings(int threads, int64_t min_work)
      : threads_(parallel::num_threads()), min_work_(parallel::min_parallel_work()) {
    parallel::set_num_threads(threads);
    parallel::set_min_parallel_work(min_work);
  }
  ~ThreadSettings() {
    parallel::set_num_threads(threads_);
    parallel::set_min_parallel_work(min_work_);
  }
  ThreadSettings(const ThreadSettings&) = delete;
  ThreadSettings& operator=(const ThreadSettings&) = delete;

 private:
  int threads_;
  int64_t min_work_;
};

}  // namespace attograd::testing
