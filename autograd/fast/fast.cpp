// autograd/fast/fast.cpp — the switch for every speed mechanism at once.
#include "autograd/fast/fast.hpp"

#include "tensor/fast/pool.hpp"

namespace attograd::fast {

ReferencePath::ReferencePath()
    : deferred_(deferred_gradients()),
      reuse_(reuse_forward_values()),
      fused_(fused_ops()),
      pooling_(pool::pooling()) {
  set_deferred_gradients(false);
  set_reuse_forward_values(false);
  set_fused_ops(false);
  pool::set_pooling(false);
}

ReferencePath::~ReferencePath() {
  set_deferred_gradients(deferred_);
  set_reuse_forward_values(reuse_);
  set_fused_ops(fused_);
  pool::set_pooling(pooling_);
}

}  // namespace attograd::fast
