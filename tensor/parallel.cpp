// tensor/parallel.cpp — the thread pool behind parallel_for.
//
// n − 1 worker threads wait for work, polling for a moment and then sleeping
// on a condition variable; the calling thread is the n-th. A job is published
// under the mutex with a new generation number, every thread runs its own
// fixed range, and the caller waits until the last worker has reported back.
// Ranges are a pure function of (count, n), never of which thread happens to
// be faster, so a run is reproducible.
#include "tensor/parallel.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tensor/error.hpp"

namespace attograd::parallel {

namespace {

// Set in the pool's workers, and in the caller while it runs its own range:
// a parallel_for reached from there runs serially.
thread_local bool inside_parallel_region = false;

// [count·i/n, count·(i+1)/n): n contiguous ranges that differ in size by at most one.
int64_t range_start(int64_t count, int index, int n) { return count * index / n; }

// How long an idle worker (and a caller waiting for its workers) polls
// before sleeping on a condition variable. Waking a sleeping thread costs
// tens of microseconds on a virtual machine (a futex wake and a reschedule);
// a training step makes its parallel products a few microseconds apart, so a
// worker that polls a little while finds the next job at once. After this
// long without work it sleeps and uses no CPU.
constexpr auto kPollTime = std::chrono::microseconds(200);

// Tells the core a poll loop is waiting (PAUSE on x86), so the other
// hardware thread of the core, if any, runs meanwhile.
inline void relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Polls ready() for kPollTime; true as soon as it holds.
template <typename Ready>
bool poll(Ready&& ready) {
  const auto deadline = std::chrono::steady_clock::now() + kPollTime;
  for (int spins = 0;; ++spins) {
    if (ready()) return true;
    relax();
    if (spins % 64 == 63 && std::chrono::steady_clock::now() > deadline) return false;
  }
}

class Pool {
 public:
  explicit Pool(int threads) : threads_(threads) {
    for (int index = 1; index < threads; ++index)
      workers_.emplace_back([this, index] { work(index); });
  }

  ~Pool() {
    {
      std::lock_guard lock(mutex_);
      stopping_.store(true);
    }
    start_.notify_all();
    for (std::thread& worker : workers_) worker.join();
  }

  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  int threads() const { return threads_; }

  void run(int64_t count, const std::function<void(int64_t, int64_t)>& body) {
    {
      std::lock_guard lock(mutex_);
      body_ = &body;
      count_ = count;
      error_ = nullptr;
      pending_.store(threads_ - 1);
      generation_.fetch_add(1);  // publishes the job to polling workers
    }
    start_.notify_all();  // and to sleeping ones
    run_range(0);
    if (!poll([this] { return pending_.load() == 0; })) {
      std::unique_lock lock(mutex_);
      done_.wait(lock, [this] { return pending_.load() == 0; });
    }
    std::lock_guard lock(mutex_);
    body_ = nullptr;
    if (error_) std::rethrow_exception(error_);
  }

 private:
  // Runs this thread's range of the current job, keeping the first exception.
  void run_range(int index) {
    const bool was_inside = inside_parallel_region;
    inside_parallel_region = true;
    try {
      const int64_t begin = range_start(count_, index, threads_);
      const int64_t end = range_start(count_, index + 1, threads_);
      if (begin < end) (*body_)(begin, end);
    } catch (...) {
      std::lock_guard lock(mutex_);
      if (!error_) error_ = std::current_exception();
    }
    inside_parallel_region = was_inside;
  }

  void work(int index) {
    uint64_t seen = 0;
    for (;;) {
      auto job_or_stop = [&] { return stopping_.load() || generation_.load() != seen; };
      if (!poll(job_or_stop)) {
        std::unique_lock lock(mutex_);
        start_.wait(lock, job_or_stop);
      }
      if (stopping_.load()) return;
      {
        // The job's fields were written under the mutex before generation_
        // changed; taking it here makes them visible to this thread.
        std::lock_guard lock(mutex_);
        seen = generation_.load();
      }
      run_range(index);
      if (pending_.fetch_sub(1) == 1) {
        std::lock_guard lock(mutex_);  // a caller between its check and its wait sees this
        done_.notify_one();
      }
    }
  }

  const int threads_;
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable start_;  // a new job (or stopping_)
  std::condition_variable done_;   // pending_ reached 0
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stopping_{false};
  // The current job; written under mutex_ before generation_ changes.
  const std::function<void(int64_t, int64_t)>* body_ = nullptr;
  int64_t count_ = 0;
  std::exception_ptr error_;
};

// 2^19 multiply-adds: 25–100 µs of one core's work, depending on the
// kernel. Handing half of it to a sleeping worker costs about 15–20 µs (the
// wake-up and the wait for it), so products of this size gain a little
// (1.5× at 655K, measured with both cores free) and smaller ones lose (a
// 393K GRU product: 1.0–1.25×; a 20K one takes 6× longer).
constexpr int64_t kDefaultMinParallelWork = int64_t{1} << 19;

int threads_from_environment() {
  const char* text = std::getenv("ATTOGRAD_NUM_THREADS");
  if (text == nullptr || *text == '\0') {
    const unsigned hardware = std::thread::hardware_concurrency();
    return hardware == 0 ? 1 : static_cast<int>(hardware);
  }
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  check(*end == '\0' && value >= 1 && value <= 1024,
        "ATTOGRAD_NUM_THREADS='{}' is not a thread count; give a positive integer such as 2, "
        "or unset it to use every core",
        text);
  return static_cast<int>(value);
}

struct State {
  // Held for the whole of a parallel run, and by set_num_threads: one job at
  // a time. A second thread that finds it taken runs its job serially.
  std::mutex busy;
  std::unique_ptr<Pool> pool;   // null until the first parallel run, or when 1 thread
  std::atomic<int> threads{0};  // 0: not read from the environment yet
  std::atomic<int64_t> min_work{kDefaultMinParallelWork};
};

State& state() {
  static State instance;
  return instance;
}

}  // namespace

int num_threads() {
  State& s = state();
  int threads = s.threads.load();
  if (threads == 0) {
    threads = threads_from_environment();
    int expected = 0;
    if (!s.threads.compare_exchange_strong(expected, threads)) threads = expected;
  }
  return threads;
}

void set_num_threads(int n) {
  check(n >= 1 && n <= 1024, "set_num_threads({}): the thread count must be in [1, 1024]", n);
  State& s = state();
  std::lock_guard lock(s.busy);
  s.threads.store(n);
  if (s.pool && s.pool->threads() != n) s.pool.reset();
}

int64_t min_parallel_work() { return state().min_work.load(); }

void set_min_parallel_work(int64_t work) {
  check(work >= 0, "set_min_parallel_work({}): the work threshold must be >= 0", work);
  state().min_work.store(work);
}

void parallel_for(int64_t count, int64_t work, const std::function<void(int64_t, int64_t)>& body) {
  if (count <= 0) return;
  const int threads = num_threads();
  if (count < 2 || threads < 2 || work < min_parallel_work() || inside_parallel_region) {
    body(0, count);
    return;
  }
  State& s = state();
  std::unique_lock lock(s.busy, std::try_to_lock);
  if (!lock.owns_lock()) {
    body(0, count);
    return;
  }
  if (!s.pool || s.pool->threads() != threads) s.pool = std::make_unique<Pool>(threads);
  s.pool->run(count, body);
}

}  // namespace attograd::parallel
