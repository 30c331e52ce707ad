// tensor/random.hpp — seeded random numbers that are the same on every machine.
//
// std::normal_distribution and friends are implementation-defined, so results
// would differ between standard libraries. Generator draws 64-bit integers
// from std::mt19937_64 (fully specified by the standard) and turns them into
// reals itself: uniform by taking the top 53 bits, normal by Box–Muller.
#pragma once

#include <cstdint>
#include <random>
#include <string>

namespace attograd {

class Generator {
 public:
  explicit Generator(uint64_t seed = 0) : engine_(seed) {}
  void seed(uint64_t seed) { engine_.seed(seed); }

  uint64_t next_u64() { return engine_(); }
  // Uniform in [0, 1).
  double uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }
  double uniform(double low, double high) { return low + (high - low) * uniform(); }
  // Normal with the given mean and standard deviation (Box–Muller, one draw per call).
  double normal(double mean = 0.0, double stddev = 1.0);
  // Uniform integer in [0, n) (n > 0), by rejection so there is no modulo bias.
  uint64_t below(uint64_t n);
  bool bernoulli(double p) { return uniform() < p; }

  // The engine's whole state as text (the standard's textual form of
  // std::mt19937_64, the same on every machine), and back: a generator given
  // another's state() draws what that one would draw next. A checkpoint keeps
  // these so a resumed training draws the same dropout masks. set_state throws
  // attograd::Error on text that is not such a state, and then changes nothing.
  std::string state() const;
  void set_state(const std::string& text);

 private:
  std::mt19937_64 engine_;
};

// The generator used when none is passed explicitly; manual_seed resets it.
Generator& default_generator();
void manual_seed(uint64_t seed);

}  // namespace attograd
