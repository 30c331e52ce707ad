// autograd/fast/sentence_products.cpp — see the header.
#include "autograd/fast/sentence_products.hpp"

namespace attograd::fast {

namespace {
thread_local bool sentence_products_on = true;
}  // namespace

bool sentence_products() { return sentence_products_on; }
void set_sentence_products(bool on) { sentence_products_on = on; }

}  // namespace attograd::fast
