// bench/timing.hpp — the clock every benchmark here reads.
//
// Seconds of CPU time this thread has used. The machine may be shared (CI,
// several builds on two cores), so wall-clock time would count the time the
// thread spent waiting for a core; thread CPU time counts only the time it ran.
// Work shared between threads cannot be timed that way (the other threads'
// time is not this thread's), so the two-thread rows read the wall clock.
#pragma once

#include <ctime>

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

}  // namespace attograd::bench
