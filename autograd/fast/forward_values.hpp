// autograd/fast/forward_values.hpp — recording values that were computed
// already, instead of computing them a second time.
//
// A greedy decoder must compute each step's output layer, out(o_t) =
// o_t Wᵀ + b, without recording, to choose its next word; the loss then needs
// the same values recorded. The op linear_with_values (autograd/ops_linear.hpp)
// records them as linear()'s output while this switch is on, so the
// (T,H) @ (H,V_out) product — the largest of a translator — is made once per
// step rather than twice.
//
// What it saves: 9.4 % of a greedy iteration of the tutorial's recipe (the
// "without forward values" row of `build/bench/bench_seq2seq`, median of
// three runs; docs/fast_paths.md); teacher-forced iterations do not use it.
// Switch: fast::set_reuse_forward_values(false), or a fast::ReferencePath
// guard (autograd/fast/fast.hpp); linear_with_values then calls linear(x,
// weight, bias) and ignores the values it was given.
// Under create_graph it needs no fallback: the values are linear's and the
// node's backward is linear's, which records when the backward pass does.
#pragma once

namespace attograd::fast {

// Whether linear_with_values records the given values (on by default). Per thread.
bool reuse_forward_values();
void set_reuse_forward_values(bool on);

}  // namespace attograd::fast
