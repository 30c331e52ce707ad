// autograd/fast/gradient_stealing.cpp — see the header.
#include "autograd/fast/gradient_stealing.hpp"

namespace attograd::fast {

namespace {
thread_local bool stealing_on = true;
}  // namespace

bool gradient_stealing() { return stealing_on; }
void set_gradient_stealing(bool on) { stealing_on = on; }

bool steal(const Tensor& t) {
  return stealing_on && t.impl_ptr().use_count() == 1 && t.storage().use_count() == 1 &&
         t.offset() == 0 && t.numel() == t.storage()->size() && t.is_contiguous();
}

}  // namespace attograd::fast
