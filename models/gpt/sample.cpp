// models/gpt/sample.cpp — see sample.hpp.
#include "models/gpt/sample.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "autograd/engine.hpp"
#include "autograd/ops.hpp"
#include "tensor/error.hpp"
#include "tensor/random.hpp"

namespace attograd::gpt {

int64_t draw(const Tensor& logits, double temperature, int64_t top_k, double uniform) {
  const std::vector<real> z = logits.to_vector();
  const auto V = static_cast<int64_t>(z.size());
  std::vector<int64_t> order(z.size());
  std::iota(order.begin(), order.end(), 0);
  const int64_t kept = top_k > 0 ? std::min(top_k, V) : V;
  // The kept ids, largest first (ties by id, so the order is the same everywhere).
  std::partial_sort(order.begin(), order.begin() + kept, order.end(), [&](int64_t a, int64_t b) {
    return z[size_t(a)] > z[size_t(b)] || (z[size_t(a)] == z[size_t(b)] && a < b);
  });
  const double largest = double(z[size_t(order[0])]);
  std::vector<double> weights(static_cast<size_t>(kept));
  double total = 0;
  for (int64_t i = 0; i < kept; ++i) {
    weights[size_t(i)] = std::exp((double(z[size_t(order[size_t(i)])]) - largest) / temperature);
    total += weights[size_t(i)];
  }
  double target = uniform * total;
  for (int64_t i = 0; i < kept; ++i) {
    target -= weights[size_t(i)];
    if (target < 0) return order[size_t(i)];
  }
  return order[size_t(kept - 1)];
}

std::vector<int64_t> sample(GPT& model, const std::vector<int64_t>& prompt,
                            const SampleOptions& options) {
  check(!prompt.empty(), "gpt::sample: the prompt is empty; give at least one character");
  check(options.temperature > 0 && std::isfinite(options.temperature),
        "gpt::sample: temperature {} must be a positive number", options.temperature);
  const nn::EvalModeGuard eval_mode(model);
  const NoGradGuard no_grad;
  const int64_t block = model.options().block_size();
  const int64_t keep = std::max<int64_t>(1, block / 2);
  Generator generator(options.seed);

  // The window: the ids the next one is predicted from (≤ block of them).
  std::vector<int64_t> window(prompt.end() - std::min<int64_t>(int64_t(prompt.size()), block),
                              prompt.end());
  KVCache cache = model.new_cache();
  Tensor logits;
  const auto read_window = [&] {  // the logits after the whole window
    if (options.kv_cache) {
      cache = model.new_cache();
      logits = model.prefill(window, cache);
    } else {
      const Tensor all = model.forward(window, 1, int64_t(window.size()));
      logits = reshape(select(all, 1, int64_t(window.size()) - 1), {model.options().vocab_size()});
    }
  };
  read_window();
  std::vector<int64_t> out;
  for (int64_t n = 0; n < options.tokens; ++n) {
    const int64_t next = draw(logits, options.temperature, options.top_k, generator.uniform());
    out.push_back(next);
    if (n + 1 == options.tokens) break;
    if (int64_t(window.size()) == block) {
      window.erase(window.begin(), window.end() - keep + 1);  // keep − 1 old ids, then next
      window.push_back(next);
      read_window();
    } else {
      window.push_back(next);
      if (options.kv_cache) {
        logits = model.step(next, cache);
      } else {
        read_window();
      }
    }
  }
  return out;
}

}  // namespace attograd::gpt
