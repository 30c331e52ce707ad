// autograd/inspect/profiler.hpp — where the time of a training step goes,
// op by op.
//
//   Profiler profiler;           // from here on, in every thread:
//   train_step();                // forward ops, backward closures, and
//                                // ProfileScope parts (an optimizer step)
//   fmt::print("{}", profiler.table());
//
// Per op name: the number of calls and the seconds spent in forward, in
// backward, and in named scopes, in a table sorted by total time.
//
// What is timed (wall-clock time). backward: each closure, from its call to
// its return. forward: an op computes its output before it records itself,
// so the engine sees only the end of it; an op's forward time is the time
// since the previous op recorded on the same thread: its own work plus
// whatever ran between the two (unrecorded ops on constants, the loop around
// them). The first op after a backward(), a scope's end or the profiler's
// start counts nothing; that gap goes to the row "(between passes)" (in the
// scope column), with whatever the program did outside its passes. A
// ProfileScope around other code gives it a row of its own.
//
// Only recorded ops are seen (ops on tensors that need a gradient). Profilers
// nest: each counts what happens while it is alive. With none alive, the
// engine pays one flag test per op (autograd/inspect/hooks.hpp).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace attograd {

// One row of the profile.
struct OpProfile {
  std::string name;
  int64_t forward_calls = 0;
  int64_t backward_calls = 0;
  int64_t scope_calls = 0;
  double forward_seconds = 0;
  double backward_seconds = 0;
  double scope_seconds = 0;
  double total_seconds() const { return forward_seconds + backward_seconds + scope_seconds; }
};

class Profiler {
 public:
  Profiler();  // starts counting
  ~Profiler();
  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;

  // What was counted so far: one row per name, largest total first (ties by
  // name).
  std::vector<OpProfile> results() const;
  // The results as a text table: calls and milliseconds per phase, the total
  // and its share of the sum of totals, and a last line with the sums.
  std::string table() const;

  struct State;

 private:
  std::unique_ptr<State> state_;
};

// The time from construction to destruction counts as one call of `name`
// (a string that outlives the scope, e.g. a literal) in every live Profiler's
// scope column: for parts of a program that are not ops, such as an
// optimizer step. Costs one flag test when no Profiler is alive.
class ProfileScope {
 public:
  explicit ProfileScope(const char* name);
  ~ProfileScope();
  ProfileScope(const ProfileScope&) = delete;
  ProfileScope& operator=(const ProfileScope&) = delete;

 private:
  const char* name_;
  bool timing_;
  std::chrono::steady_clock::time_point started_;
};

}  // namespace attograd
