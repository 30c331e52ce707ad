// tests/autograd/test_inspect.cpp — the tools that look inside the engine:
// to_dot, DetectAnomaly and Profiler (autograd/inspect/).
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <thread>

#include "attograd.hpp"
#include "tests/support/micrograd.hpp"

namespace test_inspect {

using namespace attograd;
using attograd::testing::Micrograd;
using attograd::testing::micrograd_expression;

namespace {

size_t count(const std::string& text, const std::string& word) {
  size_t n = 0;
  for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) ++n;
  return n;
}

std::string message_of(const std::function<void()>& run) {
  try {
    run();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

// ---- to_dot ---------------------------------------------------------------------

TEST_CASE("to_dot draws the micrograd expression: one node per op and leaf, one edge per input",
          "[inspect][dot]") {
  const Micrograd m = micrograd_expression();
  const std::string dot = to_dot(m.g, DotOptions().names({{"a", m.a}, {"b", m.b}}));
  CHECK(dot.rfind("digraph attograd {", 0) == 0);
  CHECK(count(dot, "shape=box,") == 25);     // the ops
  CHECK(count(dot, "shape=ellipse,") == 8);  // a, b and six constants
  CHECK(count(dot, " -> ") == 45);           // 20 binary ops and 5 unary ones
  CHECK(count(dot, "label=\"add\\n") == 13);
  CHECK(count(dot, "label=\"mul\\n") == 3);
  CHECK(count(dot, "label=\"pow\\n") == 2);
  CHECK(count(dot, "label=\"sub\\n") == 2);
  CHECK(count(dot, "label=\"div\\n") == 2);
  CHECK(count(dot, "label=\"relu\\n") == 2);
  CHECK(count(dot, "label=\"neg\\n") == 1);
  CHECK(count(dot, "label=\"constant\\n") == 6);
  CHECK(count(dot, "label=\"a\\n") == 1);
  CHECK(count(dot, "label=\"b\\n") == 1);
  CHECK(count(dot, "\\nrequires_grad\"") == 2);
  CHECK(count(dot, "penwidth=2") == 1);  // the root
  CHECK(count(dot, "omitted") == 0);
}

TEST_CASE("to_dot shows values and, after backward(retain_graph), the leaves' gradients",
          "[inspect][dot]") {
  const Micrograd m = micrograd_expression();
  backward(m.g, Tensor(), {.retain_graph = true});
  const std::string dot =
      to_dot(m.g, DotOptions().names({{"a", m.a}, {"b", m.b}}).show_values(true));
  CHECK(count(dot, "label=\"a\\n") == 1);
  CHECK(dot.find("data [-4]\\ngrad [138.8]") != std::string::npos);  // a, dg/da
  CHECK(dot.find("data [2]\\ngrad [645.6]") != std::string::npos);   // b, dg/db
  // An op's output keeps no gradient unless retain_grad() asked for it.
  CHECK(dot.find("label=\"add\\n()\\ndata [24.7]\", penwidth=2") != std::string::npos);
  CHECK(count(dot, "grad [") == 2);
}

TEST_CASE("to_dot refuses a graph backward() has freed, and says what to do", "[inspect][dot]") {
  const Micrograd m = micrograd_expression();
  backward(m.g);
  CHECK(message_of([&] { to_dot(m.g); }) ==
        "to_dot: the graph behind 'add' was freed by backward(); call to_dot before backward(), "
        "or pass retain_graph=true to backward() to draw it afterwards");
}

TEST_CASE("to_dot collapses each module into one box", "[inspect][dot]") {
  Tensor w1 = requires_grad_(ones({2, 3}));
  Tensor b1 = requires_grad_(ones({3}));
  Tensor w2 = requires_grad_(ones({3, 1}));
  Tensor x = ones({4, 2});
  Tensor loss = sum(matmul(relu(matmul(x, w1) + b1), w2));
  const DotOptions named =
      DotOptions().names({{"layer1.weight", w1}, {"layer1.bias", b1}, {"layer2.weight", w2}});

  const std::string flat = to_dot(loss, named);
  CHECK(count(flat, "shape=box,") == 5);  // matmul, add, relu, matmul, sum
  CHECK(count(flat, "label=\"layer1.weight\\n") == 1);

  // layer1: matmul, add (its parameters), relu (its input's module);
  // layer2: matmul (its weight), sum (its input's module); x stays outside.
  const std::string boxed = to_dot(loss, DotOptions(named).collapse_depth(1));
  CHECK(count(boxed, "shape=box3d") == 2);
  CHECK(boxed.find("label=\"layer1\\n3 ops, 2 parameters\"") != std::string::npos);
  CHECK(boxed.find("label=\"layer2\\n2 ops, 1 parameters\"") != std::string::npos);
  CHECK(count(boxed, "shape=box,") == 0);
  CHECK(count(boxed, "label=\"constant\\n(4,2)") == 1);
  CHECK(count(boxed, " -> ") == 2);  // x -> layer1 -> layer2
}

TEST_CASE("to_dot draws at most max_nodes nodes and notes the rest", "[inspect][dot]") {
  const Micrograd m = micrograd_expression();
  const std::string dot = to_dot(m.g, DotOptions().max_nodes(10));
  CHECK(count(dot, "shape=box,") + count(dot, "shape=ellipse,") == 10);
  CHECK(dot.find("label=\"23 more nodes not drawn\\n(max_nodes = 10)\"") != std::string::npos);
  CHECK(count(dot, "\"omitted\" -> ") >= 1);  // dashed arrows to where the cut is
  CHECK(count(to_dot(m.g, DotOptions().max_nodes(0)), "shape=box,") == 25);
}

// ---- DetectAnomaly ------------------------------------------------------------------

TEST_CASE("DetectAnomaly names the forward op that made a NaN: log of a negative number",
          "[inspect][anomaly]") {
  Tensor x = requires_grad_(from_vector({1.0, -2.0, 3.0}, {3}));
  DetectAnomaly anomaly;
  const std::string message = message_of([&] { sum(log(x * 2.0)); });
  CHECK_THAT(message,
             Catch::Matchers::StartsWith(
                 "DetectAnomaly: forward op 'log' (op #2 recorded since DetectAnomaly "
                 "began) produced nan in its output of shape (3), at element 1; its inputs "
                 "had shapes [(3)]. All inputs were finite."));
}

TEST_CASE("DetectAnomaly names the backward op whose gradient went NaN: sqrt at 0",
          "[inspect][anomaly]") {
  // sqrt(0) = 0 is finite; d sqrt/dx = 1/(2 sqrt x) is inf there, and times
  // the zero gradient that mul(·, 0) sends back it is 0·inf = NaN.
  Tensor x = requires_grad_(from_vector({4.0, 0.0}, {2}));
  DetectAnomaly anomaly;
  Tensor y = sum(sqrt(x) * 0.0);
  const std::string message = message_of([&] { backward(y); });
  CHECK_THAT(message,
             Catch::Matchers::StartsWith(
                 "DetectAnomaly: the backward of forward op 'sqrt' (op 1 of 3 in the graph's "
                 "forward order) produced nan in the gradient for its input 0 of shape (2), "
                 "at element 1; the gradient it received, of shape (2), was finite. The "
                 "forward op 'sqrt' took inputs of shapes [(2)]."));
}

TEST_CASE("DetectAnomaly names the op whose output overflowed to inf", "[inspect][anomaly]") {
  const real big = std::numeric_limits<real>::max() / 4;
  Tensor x = requires_grad_(from_vector({1.0, big}, {2}));
  DetectAnomaly anomaly;
  const std::string message = message_of([&] { sum(exp(x)); });
  CHECK_THAT(message, Catch::Matchers::StartsWith(
                          "DetectAnomaly: forward op 'exp' (op #1 recorded since DetectAnomaly "
                          "began) produced inf in its output of shape (2), at element 1;"));
}

TEST_CASE("without DetectAnomaly nothing is checked, with it every output and gradient is",
          "[inspect][anomaly]") {
  Tensor x = requires_grad_(from_vector({1.0, 2.0}, {2}));
  const int64_t before = DetectAnomaly::checks();
  backward(sum(exp(x) * 2.0));
  CHECK(DetectAnomaly::checks() == before);
  {
    DetectAnomaly anomaly;
    backward(sum(exp(x) * 2.0));
  }
  // forward: exp, mul, sum outputs; backward: sum's, mul's (one input needs
  // a gradient) and exp's gradients.
  CHECK(DetectAnomaly::checks() == before + 6);
  backward(sum(exp(x) * 2.0));
  CHECK(DetectAnomaly::checks() == before + 6);
}

// ---- Profiler -------------------------------------------------------------------

namespace {

// 2 mul, 1 add, 1 sum in forward; the same four closures in backward.
void known_step(const Tensor& w) {
  Tensor y = sum(w * w + w * 3.0);
  backward(y);
}

const OpProfile& row(const std::vector<OpProfile>& rows, const std::string& name) {
  for (const OpProfile& r : rows) {
    if (r.name == name) return r;
  }
  FAIL("no row for " << name);
  return rows.front();
}

}  // namespace

TEST_CASE("Profiler counts every forward op and backward closure exactly", "[inspect][profiler]") {
  Tensor w = requires_grad_(ones({8}));
  Profiler profiler;
  for (int i = 0; i < 5; ++i) known_step(w);
  const std::vector<OpProfile> rows = profiler.results();
  REQUIRE(rows.size() == 4);  // mul, add, sum and the time between the steps
  CHECK(row(rows, "mul").forward_calls == 10);
  CHECK(row(rows, "mul").backward_calls == 10);
  CHECK(row(rows, "add").forward_calls == 5);
  CHECK(row(rows, "sum").backward_calls == 5);
  // Before each step's first op (the first mul): the start, then four backward()s.
  CHECK(row(rows, "(between passes)").scope_calls == 5);
  CHECK(row(rows, "(between passes)").forward_calls == 0);
  for (size_t i = 1; i < rows.size(); ++i) {
    CHECK(rows[i - 1].total_seconds() >= rows[i].total_seconds());  // sorted by total
  }
  const std::string table = profiler.table();
  CHECK(table.rfind("op ", 0) == 0);
  CHECK(table.find("\n(all) ") != std::string::npos);
  CHECK(table.find("100.0%") != std::string::npos);
}

TEST_CASE("Profilers nest: each counts what happened while it was alive", "[inspect][profiler]") {
  Tensor w = requires_grad_(ones({8}));
  Profiler outer;
  known_step(w);
  {
    Profiler inner;
    known_step(w);
    known_step(w);
    CHECK(row(inner.results(), "mul").forward_calls == 4);
  }
  known_step(w);
  CHECK(row(outer.results(), "mul").forward_calls == 8);
  CHECK(row(outer.results(), "add").backward_calls == 4);
}

TEST_CASE("Profiler counts the ops of every thread", "[inspect][profiler]") {
  Profiler profiler;
  const auto work = [] {
    Tensor w = requires_grad_(ones({8}));
    for (int i = 0; i < 50; ++i) known_step(w);
  };
  std::thread first(work);
  std::thread second(work);
  first.join();
  second.join();
  CHECK(row(profiler.results(), "mul").forward_calls == 200);
  CHECK(row(profiler.results(), "mul").backward_calls == 200);
  CHECK(row(profiler.results(), "sum").forward_calls == 100);
}

TEST_CASE("ProfileScope times a named part, and an optimizer step is one", "[inspect][profiler]") {
  Tensor w = requires_grad_(ones({8}));
  nn::SGD sgd({{"w", w}}, nn::SGDOptions(0.1));
  Profiler profiler;
  for (int i = 0; i < 3; ++i) {
    known_step(w);
    sgd.step();
  }
  const OpProfile step =
      row(profiler.results(), "optimizer.step");  // a copy: results() is a temporary
  CHECK(step.scope_calls == 3);
  CHECK(step.forward_calls == 0);
  CHECK(step.scope_seconds > 0);
}

TEST_CASE("GraphCapture draws the graph of the first backward() while it is alive",
          "[inspect][dot]") {
  const Micrograd first = micrograd_expression();
  Tensor w = requires_grad_(ones({2}));
  Tensor second = sum(w * 3.0);
  {
    GraphCapture capture(DotOptions().names({{"w", w}}));
    CHECK_FALSE(capture.captured());
    backward(first.g);
    backward(second);  // not drawn: the first backward was
    REQUIRE(capture.captured());
    CHECK(count(capture.text(), "shape=box,") == 25);
  }
  Tensor third = sum(w * 3.0);
  GraphCapture later(DotOptions().names({{"w", w}}));
  backward(third);
  CHECK(count(later.text(), "shape=box,") == 2);  // mul, sum
  CHECK(count(later.text(), "label=\"w\\n(2)\\nrequires_grad\"") == 1);
}

}  // namespace test_inspect
