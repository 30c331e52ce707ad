// bench/timing.hpp — the clock every benchmark here reads.
//
// Seconds of CPU time this thread has used. The machine may be shared (CI,
// several builds on two cores), so wall-clock time would count the time the
// thread spent waiting for a core; thread CPU time counts only the time it ran.
// Work shared between threads cannot be timed that way (the other threads'
// time is not this thread's), so the two-thread rows read the wall clock.
//
// A figure is the median of kSamples samples; a sample repeats the work until
// it has taken kMinimumSampleSeconds, and bench/reference/timing.py times
// PyTorch's side the same way.
#pragma once

#include <algorithm>
#include <cstdint>
#include <ctime>
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

}  // namespace attograd::bench
