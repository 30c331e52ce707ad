// bench/timing.hpp — the clock every benchmark here reads.
//
// Seconds of CPU time this thread has used. The machine may be shared (CI,
// several builds on two cores), so wall-clock time would count the time the
// thread spent waiting for a core; thread CPU time counts only the time it ran.
// Work shared between threads cannot be timed that way (the other threads'
// time is not this thread's), so the two-thread rows read the wall clock.
//
// One-thread comparisons run on one core, both sides: PinnedToOneCpu below.
//
// A figure is the median of kSamples samples; a sample repeats the work until
// it has taken kMinimumSampleSeconds, and bench/reference/timing.py times
// PyTorch's side the same way.
#pragma once

#include <sched.h>

#include <algorithm>
#include <cstdint>
#include <ctime>
#include <fstream>
#include <string>
#include <vector>

namespace attograd::bench {

inline double thread_seconds() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return double(now.tv_sec) + 1e-9 * double(now.tv_nsec);
}

inline double wall_seconds() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return double(now.tv_sec) + 1e-9 * double(now.tv_nsec);
}

using Clock = double (*)();

constexpr int kSamples = 7;
constexpr double kMinimumSampleSeconds = 0.02;

inline double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// How many calls of `work` make one sample of at least kMinimumSampleSeconds.
template <typename Work>
int64_t calls_per_sample(Work&& work, Clock clock = thread_seconds) {
  int64_t calls = 1;
  for (;;) {
    const double start = clock();
    for (int64_t i = 0; i < calls; ++i) work();
    const double seconds = clock() - start;
    if (seconds >= kMinimumSampleSeconds) return calls;
    calls *= seconds < kMinimumSampleSeconds / 10 ? 10 : 2;
  }
}

// Seconds per call, averaged over one sample of `calls` calls.
template <typename Work>
double sample_seconds(Work&& work, int64_t calls, Clock clock = thread_seconds) {
  const double start = clock();
  for (int64_t i = 0; i < calls; ++i) work();
  return (clock() - start) / double(calls);
}

// Seconds per call of `work`: the median of kSamples samples.
template <typename Work>
double median_seconds(Work&& work, Clock clock = thread_seconds) {
  const int64_t calls = calls_per_sample(work, clock);
  std::vector<double> samples;
  for (int s = 0; s < kSamples; ++s) samples.push_back(sample_seconds(work, calls, clock));
  return median(samples);
}

// While alive, this process runs on the one CPU it was on when this was
// made, and so does every program it starts (the PyTorch reference, the
// translate runs): both sides of a one-thread ratio share one core. Without
// it the scheduler puts the reference script on either core, and the two
// cores of a shared virtual machine need not run at the same speed: on the
// machine of docs/performance.md one of them ran the same loop at half the
// speed of the other through an hour of checks, so a ratio could come out
// twice too high or too low depending on where each side landed. Thread CPU
// time does not see this (a core slowed by its host's other work still
// counts as running).
// The previous affinity comes back at the end. When pinning fails the
// benchmark runs unpinned and says so.
class PinnedToOneCpu {
 public:
  PinnedToOneCpu() {
    if (sched_getaffinity(0, sizeof previous_, &previous_) != 0) return;
    const int here = sched_getcpu();
    if (here < 0) return;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(here, &one);
    if (sched_setaffinity(0, sizeof one, &one) == 0) cpu_ = here;
  }
  ~PinnedToOneCpu() {
    if (cpu_ >= 0) sched_setaffinity(0, sizeof previous_, &previous_);
  }
  PinnedToOneCpu(const PinnedToOneCpu&) = delete;
  PinnedToOneCpu& operator=(const PinnedToOneCpu&) = delete;

  // "pinned to CPU 0 (with any program it starts)" or "unpinned …", for a header line.
  std::string describe() const {
    return cpu_ >= 0 ? "pinned to CPU " + std::to_string(cpu_) + " (with any program it starts)"
                     : "unpinned (sched_setaffinity failed)";
  }

 private:
  cpu_set_t previous_{};
  int cpu_ = -1;
};

// The processor's name from /proc/cpuinfo ("AMD EPYC …"), for the line
// that names the machine beside every table.
inline std::string cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown CPU";
}

}  // namespace attograd::bench
