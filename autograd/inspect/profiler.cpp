// autograd/inspect/profiler.cpp — counting calls and time per op name.
//
// Live profilers are kept in one list under a mutex, so an event from any
// thread reaches every one of them; each thread remembers the time of its own
// last event (see "What is timed" in profiler.hpp).
#include "autograd/inspect/profiler.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <mutex>

#include "autograd/inspect/hooks.hpp"

namespace attograd {

using Clock = detail::InspectClock;

struct Profiler::State {
  Clock::time_point started;
  std::map<std::string, OpProfile> rows;  // guarded by live_mutex
};

namespace {

std::mutex live_mutex;
std::vector<Profiler::State*> live;  // guarded by live_mutex

thread_local Clock::time_point last_event{};  // this thread's, or the epoch
thread_local bool last_was_forward = false;   // was that event an op's record()?

enum class Phase { kForward, kBackward, kScope };

// The row for the time between an op's last backward closure (or a scope,
// or the profiler's start) and the next forward pass's first op.
constexpr const char* kBetweenPasses = "(between passes)";

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// Adds one call of `name` in `phase`, from `begin` (or the profiler's start,
// if later) to `end`, to every live profiler.
void add_call(const char* name, Phase phase, Clock::time_point begin, Clock::time_point end) {
  std::lock_guard<std::mutex> lock(live_mutex);
  for (Profiler::State* state : live) {
    OpProfile& row = state->rows[name];
    const double spent = seconds(end - std::max(begin, state->started));
    switch (phase) {
      case Phase::kForward:
        ++row.forward_calls, row.forward_seconds += spent;
        break;
      case Phase::kBackward:
        ++row.backward_calls, row.backward_seconds += spent;
        break;
      case Phase::kScope:
        ++row.scope_calls, row.scope_seconds += spent;
        break;
    }
  }
  last_event = end;
  last_was_forward = phase == Phase::kForward;
}

}  // namespace

Profiler::Profiler() : state_(std::make_unique<State>()) {
  std::lock_guard<std::mutex> lock(live_mutex);
  state_->started = Clock::now();
  live.push_back(state_.get());
  detail::inspect_bits.fetch_or(detail::kProfilerBit, std::memory_order_relaxed);
}

Profiler::~Profiler() {
  std::lock_guard<std::mutex> lock(live_mutex);
  live.erase(std::find(live.begin(), live.end(), state_.get()));
  if (live.empty())
    detail::inspect_bits.fetch_and(~detail::kProfilerBit, std::memory_order_relaxed);
}

std::vector<OpProfile> Profiler::results() const {
  std::vector<OpProfile> rows;
  {
    std::lock_guard<std::mutex> lock(live_mutex);
    for (const auto& [name, row] : state_->rows) {
      rows.push_back(row);
      rows.back().name = name;
    }
  }
  std::stable_sort(rows.begin(), rows.end(), [](const OpProfile& a, const OpProfile& b) {
    return a.total_seconds() > b.total_seconds();
  });
  return rows;
}

std::string Profiler::table() const {
  const std::vector<OpProfile> rows = results();
  OpProfile sum;
  for (const OpProfile& row : rows) {
    sum.forward_calls += row.forward_calls;
    sum.backward_calls += row.backward_calls;
    sum.scope_calls += row.scope_calls;
    sum.forward_seconds += row.forward_seconds;
    sum.backward_seconds += row.backward_seconds;
    sum.scope_seconds += row.scope_seconds;
  }
  const double total = sum.total_seconds();
  const auto line = [total](const std::string& name, const OpProfile& row) {
    return fmt::format(
        "{:<24} {:>8} {:>10.3f} {:>8} {:>10.3f} {:>7} {:>10.3f} {:>10.3f} {:>6.1f}%\n", name,
        row.forward_calls, 1e3 * row.forward_seconds, row.backward_calls,
        1e3 * row.backward_seconds, row.scope_calls, 1e3 * row.scope_seconds,
        1e3 * row.total_seconds(), total > 0 ? 100.0 * row.total_seconds() / total : 0.0);
  };
  std::string text =
      fmt::format("{:<24} {:>8} {:>10} {:>8} {:>10} {:>7} {:>10} {:>10} {:>7}\n", "op", "fwd",
                  "fwd ms", "bwd", "bwd ms", "scope", "scope ms", "total ms", "share");
  for (const OpProfile& row : rows) text += line(row.name, row);
  return text + line("(all)", sum);
}

ProfileScope::ProfileScope(const char* name)
    : name_(name),
      timing_((detail::inspect_bits.load(std::memory_order_relaxed) & detail::kProfilerBit) != 0),
      started_(timing_ ? Clock::now() : Clock::time_point{}) {}

ProfileScope::~ProfileScope() {
  if (timing_) add_call(name_, Phase::kScope, started_, Clock::now());
}

namespace detail {

void profiler_on_forward(const char* name, InspectClock::time_point now) {
  // The gap since a backward, a scope or the start is not this op's: it is
  // whatever the program did between passes.
  if (!last_was_forward) {
    add_call(kBetweenPasses, Phase::kScope, last_event, now);
    last_was_forward = true;
    return add_call(name, Phase::kForward, now, now);
  }
  add_call(name, Phase::kForward, last_event, now);
}

void profiler_on_backward(const char* name, InspectClock::time_point started,
                          InspectClock::time_point now) {
  add_call(name, Phase::kBackward, started, now);
}

void profiler_mark(InspectClock::time_point now) {
  last_event = now;
  last_was_forward = false;
}

}  // namespace detail

}  // namespace attograd
