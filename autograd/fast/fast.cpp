// autograd/fast/fast.cpp — the switch for every speed mechanism at once.
#include "autograd/fast/fast.hpp"

#include "tensor/fast/pool.hpp"

namespace attograd::fast {

namespace {

void apply(const Switches& switches) {
  set_deferred_gradients(switches.deferred_gradients);
  set_reuse_forward_values(switches.reuse_forward_values);
  set_fused_ops(switches.fused_ops);
  pool::set_pooling(switches.pooling);
  set_sentence_products(switches.sentence_products);
  set_gradient_stealing(switches.gradient_stealing);
}

}  // namespace

Switches Switches::current() {
  return {fast::deferred_gradients(), fast::reuse_forward_values(),
          fast::fused_ops(),          pool::pooling(),
          fast::sentence_products(),  fast::gradient_stealing()};
}

UseSwitches::UseSwitches(const Switches& switches) : previous_(Switches::current()) {
  apply(switches);
}

UseSwitches::~UseSwitches() { apply(previous_); }

}  // namespace attograd::fast
