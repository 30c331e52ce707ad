"""attograd's seeded random numbers (tensor/random.hpp) in plain Python.

attograd draws every random number from std::mt19937_64, which the C++
standard specifies bit for bit, and turns the 64-bit draws into reals and
integers itself. Doing the same here lets the PyTorch references start from
attograd's data: the tutorial's train/validation split and its sequence of
training pairs and teacher-forcing coins (tutorial.py), and the
Nadaraya–Watson data set and initial w (nw.py). Weights and dropout masks
still come from torch's own generator.
"""
import math

MASK = (1 << 64) - 1


class Generator:
    """attograd::Generator: std::mt19937_64 and the draws made from it."""

    def __init__(self, seed):
        state = [seed & MASK]
        for i in range(1, 312):
            previous = state[-1]
            state.append((6364136223846793005 * (previous ^ (previous >> 62)) + i) & MASK)
        self.state, self.index = state, 312

    def _twist(self):
        state = self.state
        for i in range(312):
            bits = (state[i] & 0xFFFFFFFF80000000) | (state[(i + 1) % 312] & 0x7FFFFFFF)
            state[i] = state[(i + 156) % 312] ^ (bits >> 1) ^ (0xB5026F5AA96619E9 if bits & 1 else 0)
        self.index = 0

    def next_u64(self):
        if self.index == 312:
            self._twist()
        y = self.state[self.index]
        self.index += 1
        y ^= (y >> 29) & 0x5555555555555555
        y ^= (y << 17) & 0x71D67FFFEDA60000
        y ^= (y << 37) & 0xFFF7EEE000000000
        return y ^ (y >> 43)

    def uniform(self):
        """Uniform in [0, 1): the top 53 bits."""
        return (self.next_u64() >> 11) * 2.0 ** -53

    def normal(self, mean, stddev):
        """Box–Muller, one draw per call."""
        u1, u2 = 1.0 - self.uniform(), self.uniform()
        return mean + stddev * math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)

    def below(self, n):
        """Uniform integer in [0, n), by rejection."""
        limit = MASK - MASK % n
        draw = self.next_u64()
        while draw >= limit:
            draw = self.next_u64()
        return draw % n


def shuffled_indices(count, generator):
    """models/text/shuffle.hpp: Fisher–Yates with next_u64() % (i + 1)."""
    indices = list(range(count))
    for i in range(count, 1, -1):
        j = generator.next_u64() % i
        indices[i - 1], indices[j] = indices[j], indices[i - 1]
    return indices
