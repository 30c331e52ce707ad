// tensor/parallel.cpp — the thread pool behind parallel_for.
//
// A job is cut into chunks whose boundaries depend on (count, work) alone
// (tensor/parallel.hpp). The chunks are claimed one at a time from a shared
// ticket, by the calling thread as well as by the n − 1 workers: the caller
// publishes the job, wakes any sleeping worker, and starts on the chunks
// itself. A worker that arrives late finds fewer chunks left, or none; the
// caller waits only for chunks a worker has already claimed, never for a
// worker to arrive. So on a machine whose other cores are busy (a worker
// that may not run for a whole scheduler time slice) a job takes about what
// it takes on one thread, and on an idle one the workers share it.
//
// Idle workers sleep on a condition variable (kCallerSpinTime below says
// why they do not spin) and use no CPU.
#include "tensor/parallel.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tensor/error.hpp"

namespace attograd::parallel {

namespace {

// Set in the pool's workers, and in the caller while it runs its chunks: a
// parallel_for reached from there runs serially.
thread_local bool inside_parallel_region = false;

// Marks this thread as inside a parallel region while it lives.
class InsideRegion {
 public:
  InsideRegion() : was_inside_(inside_parallel_region) { inside_parallel_region = true; }
  ~InsideRegion() { inside_parallel_region = was_inside_; }
  InsideRegion(const InsideRegion&) = delete;
  InsideRegion& operator=(const InsideRegion&) = delete;

 private:
  bool was_inside_;
};

// [count·i/chunks, count·(i+1)/chunks): contiguous chunks that differ in size by at most one.
int64_t chunk_start(int64_t count, int64_t index, int64_t chunks) { return count * index / chunks; }

// How long a caller that has run out of chunks spins, waiting for the ones
// its workers claimed, before it sleeps: a worker's last chunk on a free core
// ends within this in most jobs. Sleeping beyond it frees the caller's core,
// so a worker that a busy core has taken off its CPU mid-chunk can be moved
// to it at once. Idle workers spin only briefly (kWorkerSpinTime): a worker
// that spins between jobs for long is, to the scheduler, a thread that never
// sleeps, and on a busy core such a thread loses the core for whole time
// slices, often in the middle of a chunk the caller then waits for; a
// sleeping worker that is woken runs at once. The caller never waits for a worker to wake, so the
// wake-up costs the job only the system call that issues it.
constexpr auto kCallerSpinTime = std::chrono::microseconds(10);
// A worker done with a job polls for the next one this long before it
// sleeps: back-to-back products (a training step's) then start without a
// wake-up, which on an idle machine took 512³ from 1.6× to 1.8× and 256³
// from 1.05–1.9× to 1.84× (bench_threads, 2 runs each). Longer polls cost
// the busy case (200 µs: 256³ at 0.81× with the other core busy, against
// 0.92–0.94× at 50 µs), for the reason above.
constexpr auto kWorkerSpinTime = std::chrono::microseconds(50);

// After a job its workers did not help, jobs of its size run on the caller
// alone for a while: 1 ms after one such job, doubling with each further one
// up to 1 s.
// A worker that is woken but finds its core taken costs the caller nothing
// while chunks are left (the caller takes them), but a worker taken off its
// core in the middle of a chunk keeps the caller waiting for a time slice or
// more; a busy machine risks that about once a second, and a machine whose
// cores have come free gets its workers back within a second.
constexpr std::chrono::steady_clock::duration kFirstTimeAlone = std::chrono::milliseconds(1);
constexpr std::chrono::steady_clock::duration kLongestTimeAlone = std::chrono::seconds(1);

// The calling thread's CPU time: what it ran, not counting the time its core
// ran other threads.
std::chrono::nanoseconds thread_cpu_time() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return std::chrono::seconds(now.tv_sec) + std::chrono::nanoseconds(now.tv_nsec);
}

// Tells the core a spin loop is waiting (PAUSE on x86).
inline void relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Spins on ready() for `time`; true as soon as it holds.
template <typename Ready>
bool spin(Ready&& ready, std::chrono::steady_clock::duration time = kCallerSpinTime) {
  const auto deadline = std::chrono::steady_clock::now() + time;
  for (int spins = 0;; ++spins) {
    if (ready()) return true;
    relax();
    if (spins % 16 == 15 && std::chrono::steady_clock::now() > deadline) return false;
  }
}

// The ticket: one 64-bit word holding the job's number, its chunk count and
// the next unclaimed chunk, so that a claim (one compare-exchange) checks that
// it is taking a chunk of the job it read.
constexpr int kIndexBits = 12;
constexpr uint64_t kIndexMask = (uint64_t{1} << kIndexBits) - 1;
struct Ticket {
  uint64_t job;
  int64_t chunks, next;
  static Ticket read(uint64_t word) {
    return {word >> (2 * kIndexBits), static_cast<int64_t>((word >> kIndexBits) & kIndexMask),
            static_cast<int64_t>(word & kIndexMask)};
  }
  uint64_t word() const {
    return job << (2 * kIndexBits) | static_cast<uint64_t>(chunks) << kIndexBits |
           static_cast<uint64_t>(next);
  }
  bool has_work() const { return next < chunks; }
};

}  // namespace

// The most chunks a job is cut into (kIndexBits must hold it).
static_assert(kMaxChunks <= int64_t{kIndexMask});

namespace {

class Pool {
 public:
  explicit Pool(int threads) : threads_(threads) {
    for (int index = 1; index < threads; ++index) workers_.emplace_back([this] { work(); });
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

  void run(int64_t count, int64_t work, int64_t chunks,
           const std::function<void(int64_t, int64_t)>& body) {
    Record& record = records_[std::bit_width(static_cast<uint64_t>(work))];
    const auto start = std::chrono::steady_clock::now();
    if (start < record.alone_until) {
      // Workers have not helped lately (the other cores are busy): the
      // caller runs the chunks itself, in order, without waking anyone.
      const InsideRegion inside;
      for (int64_t i = 0; i < chunks; ++i) {
        body(chunk_start(count, i, chunks), chunk_start(count, i + 1, chunks));
      }
      return;
    }
    // No worker touches the job's fields now: every chunk of the last job
    // was finished before the last run returned, and a claim needs a chunk.
    body_ = &body;
    count_ = count;
    error_ = nullptr;
    failed_.store(false);
    finished_.store(0);
    ++job_;
    ticket_.store(Ticket{job_, chunks, 0}.word());  // publishes the job (seq_cst)
    if (sleepers_.load() > 0) {
      { std::lock_guard lock(mutex_); }  // a worker between its check and its wait sees this
      start_.notify_all();
    }
    const auto own_start = thread_cpu_time();
    int64_t own = 0;
    while (claim_and_run()) ++own;
    const auto own_cpu = thread_cpu_time() - own_start;
    auto done = [&] { return finished_.load() == chunks; };
    if (!spin(done)) {
      std::unique_lock lock(mutex_);
      caller_sleeping_.store(true);
      done_.wait(lock, done);
      caller_sleeping_.store(false);
    }
    const auto end = std::chrono::steady_clock::now();
    body_ = nullptr;
    // The job helped when it took at most 9/10 of what the caller alone
    // would have: its own chunks' CPU time per chunk, times the chunks. CPU
    // time, not the wall clock: a caller whose core a woken worker shared ran
    // its chunks slowly without doing more work, and a worker that arrived
    // late, or ran on a busy core, shows in the job's wall time.
    const bool helped = own > 0 && own < chunks && (end - start) * 10 * own <= own_cpu * chunks * 9;
    record.learn(helped, end);
    if (error_) std::rethrow_exception(error_);
  }

 private:
  // Claims the next chunk of the current job and runs it; false when no
  // chunk is left.
  bool claim_and_run() {
    uint64_t word = ticket_.load();
    Ticket ticket = Ticket::read(word);
    for (;;) {
      if (!ticket.has_work()) return false;
      Ticket claimed = ticket;
      ++claimed.next;
      if (ticket_.compare_exchange_weak(word, claimed.word())) break;
      ticket = Ticket::read(word);
    }
    // The claim succeeded on the job published with this ticket, and that
    // job cannot end before this chunk is counted below: its fields hold.
    run_chunk(ticket.next, ticket.chunks);
    if (finished_.fetch_add(1) + 1 == ticket.chunks && caller_sleeping_.load()) {
      { std::lock_guard lock(mutex_); }  // the caller between its check and its wait sees this
      done_.notify_one();
    }
    return true;
  }

  // Runs one chunk, keeping the first exception; once one chunk has thrown,
  // the chunks not started yet are skipped.
  void run_chunk(int64_t index, int64_t chunks) {
    if (failed_.load()) return;
    const InsideRegion inside;
    try {
      (*body_)(chunk_start(count_, index, chunks), chunk_start(count_, index + 1, chunks));
    } catch (...) {
      std::lock_guard lock(mutex_);
      if (!error_) error_ = std::current_exception();
      failed_.store(true);
    }
  }

  void work() {
    auto work_or_stop = [&] { return stopping_.load() || Ticket::read(ticket_.load()).has_work(); };
    for (;;) {
      if (!spin(work_or_stop, kWorkerSpinTime)) {
        std::unique_lock lock(mutex_);
        sleepers_.fetch_add(1);
        start_.wait(lock, work_or_stop);
        sleepers_.fetch_sub(1);
      }
      if (stopping_.load()) return;
      while (claim_and_run()) {
      }
    }
  }

  const int threads_;
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable start_;  // work to claim (or stopping_), for sleeping workers
  std::condition_variable done_;   // every chunk finished, for a sleeping caller
  std::atomic<uint64_t> ticket_{0};
  std::atomic<int64_t> finished_{0};
  std::atomic<int> sleepers_{0};
  std::atomic<bool> caller_sleeping_{false};
  std::atomic<bool> stopping_{false};
  std::atomic<bool> failed_{false};
  // What jobs of one size (work in [2^(b-1), 2^b)) have shown of the
  // machine. A job helped when a worker ran some of its chunks and the job
  // took at most 9/10 of the caller's time alone (run() says how that is
  // reckoned). One that did not help doubles the time for which jobs of its size
  // then run on the caller alone (from kFirstTimeAlone up to
  // kLongestTimeAlone); one that helped halves it. Sizes learn apart: a
  // product too small for a worker to reach in time says nothing about a
  // large one.
  struct Record {
    using Duration = std::chrono::steady_clock::duration;
    Duration time_alone{};
    std::chrono::steady_clock::time_point alone_until{};

    void learn(bool helped, std::chrono::steady_clock::time_point now) {
      if (helped) {
        time_alone = time_alone / 2 < kFirstTimeAlone ? Duration::zero() : time_alone / 2;
        return;
      }
      time_alone = std::clamp<Duration>(2 * time_alone, kFirstTimeAlone, kLongestTimeAlone);
      alone_until = now + time_alone;
    }
  };
  // The caller's alone (run() is called under State::busy).
  std::array<Record, 65> records_{};
  // The current job; written by the caller before ticket_ publishes it.
  uint64_t job_ = 0;
  const std::function<void(int64_t, int64_t)>* body_ = nullptr;
  int64_t count_ = 0;
  std::exception_ptr error_;  // under mutex_ while the job runs
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

int64_t chunk_count(int64_t count, int64_t work) {
  if (count < 2) return count < 1 ? 0 : 1;
  const int64_t by_work = std::max<int64_t>(2, work / kChunkWork);
  return std::min({count, kMaxChunks, by_work});
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
  s.pool->run(count, work, chunk_count(count, work), body);
}

}  // namespace attograd::parallel
