#include "tensor/random.hpp"

#include <cmath>
#include <numbers>
#include <sstream>

#include "tensor/error.hpp"

namespace attograd {

double Generator::normal(double mean, double stddev) {
  // Box–Muller: two uniforms u1 ∈ (0,1], u2 ∈ [0,1) give a standard normal
  // sqrt(-2 ln u1) · cos(2π u2).
  const double u1 = 1.0 - uniform();
  const double u2 = uniform();
  return mean + stddev * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

uint64_t Generator::below(uint64_t n) {
  const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t draw = engine_();
  while (draw >= limit) draw = engine_();
  return draw % n;
}

std::string Generator::state() const {
  std::ostringstream text;
  text << engine_;
  return text.str();
}

void Generator::set_state(const std::string& text) {
  std::istringstream in(text);
  std::mt19937_64 engine;
  in >> engine;
  check(!in.fail() && (in >> std::ws).eof(),
        "Generator::set_state: the text is not the state of a std::mt19937_64 ({} characters)",
        text.size());
  engine_ = engine;
}

Generator& default_generator() {
  static thread_local Generator generator(0);
  return generator;
}

void manual_seed(uint64_t seed) { default_generator().seed(seed); }

}  // namespace attograd
