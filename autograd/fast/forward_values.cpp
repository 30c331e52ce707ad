// autograd/fast/forward_values.cpp — see the header.
#include "autograd/fast/forward_values.hpp"

namespace attograd::fast {

namespace {
thread_local bool reuse_on = true;
}  // namespace

bool reuse_forward_values() { return reuse_on; }
void set_reuse_forward_values(bool on) { reuse_on = on; }

}  // namespace attograd::fast
