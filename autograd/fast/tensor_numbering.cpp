// autograd/fast/tensor_numbering.cpp — an open-addressing table (see the header).
#include "autograd/fast/tensor_numbering.hpp"

namespace attograd::fast {

size_t TensorNumbering::find(const TensorImpl* t) const {
  if (slots_.empty()) return npos;
  for (size_t i = home(t);; i = (i + 1) & (slots_.size() - 1)) {
    if (slots_[i].tensor == t) return slots_[i].number;
    if (slots_[i].tensor == nullptr) return npos;
  }
}

bool TensorNumbering::insert(const TensorImpl* t) {
  if (2 * (count_ + 1) > slots_.size()) grow();
  for (size_t i = home(t);; i = (i + 1) & (slots_.size() - 1)) {
    if (slots_[i].tensor == t) return false;
    if (slots_[i].tensor == nullptr) {
      slots_[i] = {t, count_++};
      return true;
    }
  }
}

// Where t's search starts. Heap addresses share their low bits (alignment)
// and high bits (the heap's region); multiplying by 2^64/φ (Fibonacci
// hashing) mixes every bit into the top ones, which pick the slot.
size_t TensorNumbering::home(const TensorImpl* t) const {
  const uint64_t mixed = reinterpret_cast<uintptr_t>(t) * uint64_t(0x9E3779B97F4A7C15);
  return static_cast<size_t>(mixed >> (64 - bits_));
}

void TensorNumbering::grow() {
  ObjectVector<Slot> old = std::move(slots_);
  bits_ = old.empty() ? 5 : bits_ + 1;  // 32 slots (512 bytes, one pool block) hold 16 tensors
  slots_.assign(size_t(1) << bits_, Slot{});
  for (const Slot& slot : old) {
    if (slot.tensor == nullptr) continue;
    size_t i = home(slot.tensor);
    while (slots_[i].tensor != nullptr) i = (i + 1) & (slots_.size() - 1);
    slots_[i] = slot;
  }
}

}  // namespace attograd::fast
