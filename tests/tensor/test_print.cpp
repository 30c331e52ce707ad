// tests/tensor/test_print.cpp — fmt::format("{}", t) against exact strings.
//
// The layout follows torch's: four decimals, columns right-aligned to the
// widest entry, nested brackets indented under the first, scientific notation
// when the magnitudes call for it, and "..." with three entries kept at each
// end of every axis once a tensor has more than 1000 elements.
#include <catch2/catch.hpp>
#include <string>

#include "attograd.hpp"

namespace test_print {

using namespace attograd;

TEST_CASE("a small matrix prints exactly", "[tensor][print]") {
  CHECK(fmt::format("{}", tensor({{1, -2.5}, {3, 4}})) ==
        "tensor([[ 1.0000, -2.5000],\n"
        "        [ 3.0000,  4.0000]], shape=(2,2))");
  CHECK(to_string(tensor({{1, -2.5}, {3, 4}})) == fmt::format("{}", tensor({{1, -2.5}, {3, 4}})));
}

TEST_CASE("vectors, scalars, 3-D blocks and views print exactly", "[tensor][print]") {
  CHECK(to_string(tensor({0.5, 10, -3})) == "tensor([ 0.5000, 10.0000, -3.0000], shape=(3))");
  CHECK(to_string(scalar(2)) == "tensor(2.0000, shape=())");
  CHECK(to_string(requires_grad_(tensor({1}))) ==
        "tensor([1.0000], shape=(1), requires_grad=true)");
  // Blank lines separate the 2-D blocks of a 3-D tensor, like torch.
  CHECK(to_string(reshape(arange(0, 8), {2, 2, 2})) ==
        "tensor([[[0.0000, 1.0000],\n"
        "         [2.0000, 3.0000]],\n"
        "\n"
        "        [[4.0000, 5.0000],\n"
        "         [6.0000, 7.0000]]], shape=(2,2,2))");
  // A transposed view prints its logical order, not its storage order.
  CHECK(to_string(transpose(tensor({{1, 2}, {3, 4}}), 0, 1)) ==
        "tensor([[1.0000, 3.0000],\n"
        "        [2.0000, 4.0000]], shape=(2,2))");
  CHECK(to_string(zeros({0})) == "tensor([], shape=(0))");
  CHECK(to_string(Tensor()) == "tensor(undefined)");
}

TEST_CASE("very large or small magnitudes switch to scientific notation", "[tensor][print]") {
  CHECK(to_string(tensor({1e-5, 1})) == "tensor([1.0000e-05, 1.0000e+00], shape=(2))");
  CHECK(to_string(tensor({2e9, -1})) == "tensor([ 2.0000e+09, -1.0000e+00], shape=(2))");
}

TEST_CASE("a 2000-element tensor is elided with ...", "[tensor][print]") {
  CHECK(to_string(arange(0, 2000)) ==
        "tensor([   0.0000,    1.0000,    2.0000, ..., 1997.0000, 1998.0000, 1999.0000], "
        "shape=(2000))");
  const std::string matrix = to_string(reshape(arange(0, 2000), {40, 50}));
  CHECK(matrix ==
        "tensor([[   0.0000,    1.0000,    2.0000, ...,   47.0000,   48.0000,   49.0000],\n"
        "        [  50.0000,   51.0000,   52.0000, ...,   97.0000,   98.0000,   99.0000],\n"
        "        [ 100.0000,  101.0000,  102.0000, ...,  147.0000,  148.0000,  149.0000],\n"
        "        ...,\n"
        "        [1850.0000, 1851.0000, 1852.0000, ..., 1897.0000, 1898.0000, 1899.0000],\n"
        "        [1900.0000, 1901.0000, 1902.0000, ..., 1947.0000, 1948.0000, 1949.0000],\n"
        "        [1950.0000, 1951.0000, 1952.0000, ..., 1997.0000, 1998.0000, 1999.0000]], "
        "shape=(40,50))");
  // 1000 elements is still printed in full.
  CHECK(to_string(arange(0, 1000)).find("...") == std::string::npos);
}

}  // namespace test_print
