// autograd/fast/sentence_products.hpp — a sentence's known inputs multiplied
// by their weights once, not once per step.
//
// A decoder step t applies a layer to [a_t; b_t], where a_t is the word it
// is fed and b_t something the previous steps computed. Under teacher forcing
// every a_t is known before the first step, so a_t's block of the weight can
// take all T of them in one product (KnownInputsLinear, autograd/ops_linear.hpp):
// the block is read once per sentence instead of once per word, forward and
// backward. Each step then takes only b_t through the other block. The sums
// are linear's in another order, so the results agree to float rounding.
//
// Switch: fast::set_sentence_products(false), or a fast::ReferencePath guard
// (autograd/fast/fast.hpp); KnownInputsLinear then takes each step through
// the whole layer, linear(cat({a_t, b_t}, 1), W, bias).
#pragma once

namespace attograd::fast {

// Whether KnownInputsLinear forms its known inputs' products for a whole sentence at
// once (on by default). Per thread.
bool sentence_products();
void set_sentence_products(bool on);

}  // namespace attograd::fast
