// autograd/fast/sentence_products.cpp — see the header.
#include "autograd/fast/sentence_products.hpp"

#include "autograd/ops.hpp"

namespace attograd::fast {

namespace {
thread_local bool sentence_products_on = true;
}  // namespace

bool sentence_products() { return sentence_products_on; }
void set_sentence_products(bool on) { sentence_products_on = on; }

namespace detail {

Tensor sentence_product(const std::vector<Tensor>& known, const Tensor& weight,
                        const Tensor& bias) {
  if (!sentence_products_on || known.empty()) return Tensor();
  return linear_columns(cat(known, 0), weight, 0, bias);  // (T,out)
}

Tensor sentence_step(const Tensor& product, int64_t t, const Tensor& b, const Tensor& weight,
                     int64_t n_a) {
  return linear_columns(b, weight, n_a, select(product, 0, t));
}

}  // namespace detail

}  // namespace attograd::fast
