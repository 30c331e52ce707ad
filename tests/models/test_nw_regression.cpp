// tests/models/test_nw_regression.cpp — attention pooling as Nadaraya–Watson
// kernel regression: the data, the kernels (values, normalisation, the
// boxcar's empty window), the learned-w model (leave-one-out keys, gradients
// checked by finite differences and against a hand-written derivative, the
// second derivative of the training loss, the saddle at w = 0), and the
// seed's results over 20 seeds.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "attograd.hpp"
#include "models/nw_regression/nw_regression.hpp"
#include "nn/optim.hpp"

namespace test_nw_regression {

using namespace attograd;
using namespace attograd::nw_regression;

namespace {

// Loose enough for the float build, tight enough to catch a wrong formula.
constexpr double kTolerance = 1e-5;

std::vector<double> values_of(const Tensor& t) {
  const std::vector<real> values = t.to_vector();
  return {values.begin(), values.end()};
}

double f(double x) { return 2 * std::sin(x) + std::pow(x, 0.8); }

// Every row of a (Q,K) weight matrix is a probability distribution.
void require_rows_are_distributions(const Tensor& weights) {
  REQUIRE(weights.dim() == 2);
  const std::vector<double> values = values_of(weights);
  const int64_t cols = weights.size(1);
  for (int64_t row = 0; row < weights.size(0); ++row) {
    double total = 0;
    for (int64_t col = 0; col < cols; ++col) {
      const double value = values[static_cast<size_t>(row * cols + col)];
      INFO("row " << row << " col " << col);
      REQUIRE(std::isfinite(value));
      REQUIRE(value >= 0);
      total += value;
    }
    INFO("row " << row);
    CHECK(total == Approx(1).margin(kTolerance));
  }
}

}  // namespace

// ---------------------------------------------------------------- the data

TEST_CASE(
    "make_dataset follows the seed: sorted inputs in 0 ≤ x < 5, noisy targets, 60 test inputs",
    "[nw_regression]") {
  Generator generator(7);
  const Dataset data = make_dataset(generator);
  REQUIRE(data.x_train.shape() == Shape{50});
  REQUIRE(data.y_train.shape() == Shape{50});
  REQUIRE(data.x_test.shape() == Shape{60});
  REQUIRE(data.y_truth.shape() == Shape{60});

  const std::vector<double> x = values_of(data.x_train);
  CHECK(std::is_sorted(x.begin(), x.end()));
  CHECK(*std::min_element(x.begin(), x.end()) >= 0);
  CHECK(*std::max_element(x.begin(), x.end()) < 5);

  const std::vector<double> tests = values_of(data.x_test);
  const std::vector<double> truth = values_of(data.y_truth);
  for (size_t i = 0; i < tests.size(); ++i) {
    CHECK(tests[i] == Approx(static_cast<double>(i) / 10).margin(1e-6));
    CHECK(truth[i] == Approx(f(tests[i])).margin(kTolerance));
  }
  CHECK(truth[10] == Approx(2 * std::sin(1.0) + 1).margin(kTolerance));  // f(1) = 2 sin 1 + 1

  // Same seed, same data; another seed, other data.
  Generator again(7);
  const Dataset same = make_dataset(again);
  CHECK(values_of(same.x_train) == x);
  CHECK(values_of(same.y_train) == values_of(data.y_train));
  Generator other(8);
  CHECK(values_of(make_dataset(other).x_train) != x);
}

TEST_CASE("the training noise has mean 0 and standard deviation 0.5", "[nw_regression]") {
  Generator generator(3);
  const Dataset data = make_dataset(generator, DatasetOptions().train_size(20000));
  const std::vector<double> x = values_of(data.x_train);
  const std::vector<double> y = values_of(data.y_train);
  double total = 0, squares = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double noise = y[i] - f(x[i]);
    total += noise;
    squares += noise * noise;
  }
  const double mean = total / static_cast<double>(x.size());
  const double stddev = std::sqrt(squares / static_cast<double>(x.size()) - mean * mean);
  CHECK(std::abs(mean) < 0.02);  // 4 standard errors (0.5/√20000 = 0.0035) and then some
  CHECK(stddev == Approx(0.5).margin(0.01));
}

TEST_CASE("make_dataset rejects impossible options", "[nw_regression]") {
  Generator generator(0);
  CHECK_THROWS_AS(make_dataset(generator, DatasetOptions().train_size(0)), Error);
  CHECK_THROWS_AS(make_dataset(generator, DatasetOptions().noise_stddev(-1)), Error);
  CHECK_THROWS_AS(make_dataset(generator, DatasetOptions().test_size(0)), Error);
}

TEST_CASE("the options have the seed's defaults and read back what is set", "[nw_regression]") {
  const DatasetOptions data;
  CHECK(data.train_size() == 50);
  CHECK(data.noise_stddev() == 0.5);
  CHECK(data.input_limit() == 5.0);
  CHECK(data.test_size() == 60);
  CHECK(DatasetOptions().train_size(7).train_size() == 7);
  CHECK(TrainOptions().epochs() == 100);
  CHECK(TrainOptions().lr() == 0.5);
  CHECK(TrainOptions().epochs(3).lr(0.1).lr() == 0.1);
  CHECK(NWKernelRegressionOptions().weight_count() == 1);
  CHECK(NWKernelRegressionOptions().weight_count(49).weight_count() == 49);
  const ExperimentOptions experiment =
      ExperimentOptions().seed(3).kernel(Kernel::boxcar).weight_shape(WeightShape::vector);
  CHECK(experiment.seed() == 3);
  CHECK(experiment.kernel() == Kernel::boxcar);
  CHECK(experiment.weight_shape() == WeightShape::vector);
  CHECK(experiment.bandwidth() == 1.0);
}

// ---------------------------------------------------------------- nonparametric estimators

TEST_CASE("average pooling predicts the mean of the targets everywhere", "[nw_regression]") {
  const Tensor prediction = average_pooling(tensor({1, 2, 6}), 4);
  CHECK(values_of(prediction) == std::vector<double>{3, 3, 3, 3});
  CHECK_THROWS_AS(average_pooling(Tensor::empty({0}), 4), Error);
}

TEST_CASE("attention pooling: softmax of −(x − xᵢ)²/2, rows summing to 1", "[nw_regression]") {
  // One query at 0, keys 0 and 1: weights ∝ (1, e^{−1/2}).
  const Pooling pooled = attention_pooling(tensor({0}), tensor({0, 1}), tensor({1, 3}));
  const double a = 1 / (1 + std::exp(-0.5));
  REQUIRE(pooled.attention_weights.shape() == Shape{1, 2});
  CHECK(pooled.attention_weights.at({0, 0}) == Approx(a).margin(kTolerance));
  CHECK(pooled.attention_weights.at({0, 1}) == Approx(1 - a).margin(kTolerance));
  CHECK(pooled.predictions.at({0}) == Approx(a * 1 + (1 - a) * 3).margin(kTolerance));

  Generator generator(1);
  const Dataset data = make_dataset(generator);
  const Pooling fit = attention_pooling(data.x_test, data.x_train, data.y_train);
  REQUIRE(fit.attention_weights.shape() == Shape{60, 50});
  require_rows_are_distributions(fit.attention_weights);
  // It is Gaussian Nadaraya–Watson with σ = 1.
  const Pooling gaussian =
      nadaraya_watson(data.x_test, data.x_train, data.y_train, Kernel::gaussian, 1.0);
  const std::vector<double> expected = values_of(gaussian.predictions);
  const std::vector<double> actual = values_of(fit.predictions);
  for (size_t i = 0; i < actual.size(); ++i) CHECK(actual[i] == Approx(expected[i]).margin(1e-5));
}

TEST_CASE("kernel values: Gaussian, boxcar |u| < 1, Epanechnikov 3/4·(1 − u²)", "[nw_regression]") {
  CHECK(kernel_value(Kernel::gaussian, 0) == 1);
  CHECK(kernel_value(Kernel::gaussian, 1) == Approx(std::exp(-0.5)));
  CHECK(kernel_value(Kernel::gaussian, -2) == Approx(std::exp(-2.0)));

  CHECK(kernel_value(Kernel::boxcar, 0) == 1);
  CHECK(kernel_value(Kernel::boxcar, 0.999) == 1);
  CHECK(kernel_value(Kernel::boxcar, -0.999) == 1);
  CHECK(kernel_value(Kernel::boxcar, 1) == 0);  // the window is open: |u| < 1
  CHECK(kernel_value(Kernel::boxcar, -1) == 0);
  CHECK(kernel_value(Kernel::boxcar, 3) == 0);

  CHECK(kernel_value(Kernel::epanechnikov, 0) == 0.75);
  CHECK(kernel_value(Kernel::epanechnikov, 0.5) == Approx(0.5625));
  CHECK(kernel_value(Kernel::epanechnikov, -0.5) == Approx(0.5625));
  CHECK(kernel_value(Kernel::epanechnikov, 1) == 0);
  CHECK(kernel_value(Kernel::epanechnikov, 2) == 0);  // max(·, 0): never negative
}

TEST_CASE("kernel names round-trip and unknown ones are refused with the choices",
          "[nw_regression]") {
  for (Kernel kernel : kAllKernels) CHECK(kernel_from_string(to_string(kernel)) == kernel);
  try {
    (void)kernel_from_string("cubic");
    FAIL("no exception");
  } catch (const Error& error) {
    CHECK(std::string(error.what()).find("gaussian|boxcar|epanechnikov") != std::string::npos);
  }
  CHECK(weight_shape_from_string("vector") == WeightShape::vector);
  CHECK_THROWS_AS(weight_shape_from_string("matrix"), Error);
}

TEST_CASE("Nadaraya–Watson weights are a weighted average for every kernel and bandwidth",
          "[nw_regression]") {
  Generator generator(2);
  const Dataset data = make_dataset(generator);
  for (Kernel kernel : kAllKernels) {
    for (double bandwidth : {0.05, 0.3, 1.0, 4.0}) {
      INFO(to_string(kernel) << " σ = " << bandwidth);
      const Pooling fit =
          nadaraya_watson(data.x_test, data.x_train, data.y_train, kernel, bandwidth);
      REQUIRE(fit.attention_weights.shape() == Shape{60, 50});
      require_rows_are_distributions(fit.attention_weights);
      // A weighted average never leaves the range of the values.
      const std::vector<double> y = values_of(data.y_train);
      const auto [low, high] = std::minmax_element(y.begin(), y.end());
      for (double prediction : values_of(fit.predictions)) {
        CHECK(prediction >= *low - 1e-5);
        CHECK(prediction <= *high + 1e-5);
      }
    }
  }
}

TEST_CASE("boxcar and Epanechnikov on a hand-worked example", "[nw_regression]") {
  const Tensor keys = tensor({0, 1, 2, 3});
  const Tensor values = tensor({1, 2, 3, 4});
  // σ = 1.5, query 1: keys 0, 1, 2 are inside the window (|u| ≤ 2/3), key 3 is not.
  const Pooling boxcar = nadaraya_watson(tensor({1}), keys, values, Kernel::boxcar, 1.5);
  CHECK(boxcar.predictions.at({0}) == Approx(2).margin(kTolerance));
  const std::vector<double> weights = values_of(boxcar.attention_weights);
  REQUIRE(weights.size() == 4);
  for (size_t j = 0; j < 3; ++j) CHECK(weights[j] == Approx(1.0 / 3).margin(kTolerance));
  CHECK(weights[3] == 0);
  // σ = 1, query 0.5: u = 0.5, −0.5, −1.5, −2.5 → K = 0.5625, 0.5625, 0, 0.
  const Pooling parabola = nadaraya_watson(tensor({0.5}), keys, values, Kernel::epanechnikov, 1);
  CHECK(parabola.predictions.at({0}) == Approx(1.5).margin(kTolerance));
  // σ = 2, query 0.5: u = 0.25, −0.25, −0.75, −1.25 → K ∝ 0.9375, 0.9375, 0.4375, 0.
  const Pooling wide = nadaraya_watson(tensor({0.5}), keys, values, Kernel::epanechnikov, 2);
  const double total = 0.9375 + 0.9375 + 0.4375;
  CHECK(wide.predictions.at({0}) ==
        Approx((0.9375 * 1 + 0.9375 * 2 + 0.4375 * 3) / total).margin(kTolerance));
}

TEST_CASE("a query beyond every window gets the nearest key's value, not NaN", "[nw_regression]") {
  const Tensor keys = tensor({0, 1, 2, 3});
  const Tensor values = tensor({1, 2, 3, 4});
  for (Kernel kernel : {Kernel::boxcar, Kernel::epanechnikov}) {
    INFO(to_string(kernel));
    // Queries far to the right, far to the left, and between two keys with σ too small.
    const Pooling fit = nadaraya_watson(tensor({10, -7, 1.5, 2.2}), keys, values, kernel, 0.1);
    CHECK(values_of(fit.predictions) == std::vector<double>{4, 1, 2, 3});  // 1.5: tie → first
    require_rows_are_distributions(fit.attention_weights);
    CHECK(fit.attention_weights.at({0, 3}) == 1);
    CHECK(fit.attention_weights.at({2, 1}) == 1);

    // The limit from inside: just within the last window only the nearest key counts.
    const Pooling inside = nadaraya_watson(tensor({3.95}), keys, values, kernel, 1.0);
    CHECK(inside.predictions.at({0}) == Approx(4).margin(kTolerance));
  }
  // The Gaussian never runs out of weight: its softmax works in log space.
  const Pooling far = nadaraya_watson(tensor({100}), keys, values, Kernel::gaussian, 0.01);
  CHECK(std::isfinite(far.predictions.at({0})));
  CHECK(far.predictions.at({0}) == Approx(4).margin(kTolerance));
  require_rows_are_distributions(far.attention_weights);
}

TEST_CASE("test inputs past the data use the fallback in the real experiment", "[nw_regression]") {
  // Training inputs are below 5, test inputs reach 5.9: with σ = 0.5 the last
  // queries are beyond every boxcar window.
  Generator generator(0);
  const Dataset data = make_dataset(generator);
  const std::vector<double> x = values_of(data.x_train);
  const Pooling fit = nadaraya_watson(data.x_test, data.x_train, data.y_train, Kernel::boxcar, 0.5);
  const std::vector<double> predictions = values_of(fit.predictions);
  bool saw_empty_window = false;
  for (size_t i = 0; i < predictions.size(); ++i) {
    const double query = static_cast<double>(i) / 10;
    REQUIRE(std::isfinite(predictions[i]));
    if (query - x.back() >= 0.5 + 1e-6) {
      saw_empty_window = true;
      CHECK(predictions[i] == Approx(values_of(data.y_train).back()).margin(kTolerance));
    }
  }
  CHECK(saw_empty_window);
}

TEST_CASE("nadaraya_watson rejects bad bandwidths and mismatched inputs", "[nw_regression]") {
  const Tensor keys = tensor({0, 1});
  const Tensor values = tensor({1, 2});
  for (double bandwidth : {0.0, -1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    CHECK_THROWS_AS(nadaraya_watson(tensor({0}), keys, values, Kernel::boxcar, bandwidth), Error);
  }
  CHECK_THROWS_AS(nadaraya_watson(tensor({0}), keys, tensor({1, 2, 3}), Kernel::gaussian, 1),
                  Error);
  CHECK_THROWS_AS(nadaraya_watson(tensor({{0}}), keys, values, Kernel::gaussian, 1), Error);
}

// ---------------------------------------------------------------- the learned attention

TEST_CASE("leave_one_out drops the diagonal of the n × n tiling", "[nw_regression]") {
  const Tensor x = requires_grad_(tensor({1, 2, 3, 4}));
  const Tensor rows = leave_one_out(x);
  REQUIRE(rows.shape() == Shape{4, 3});
  CHECK(values_of(rows) == std::vector<double>{2, 3, 4, 1, 3, 4, 1, 2, 4, 1, 2, 3});
  // Each entry appears in n − 1 rows, so its gradient is n − 1.
  backward(sum(rows));
  CHECK(values_of(grad(x)) == std::vector<double>{3, 3, 3, 3});
  CHECK_THROWS_AS(leave_one_out(tensor({1})), Error);
}

TEST_CASE("NWKernelRegression has one parameter w, drawn uniform in 0 ≤ w < 1 from the generator",
          "[nw_regression]") {
  Generator generator(5);
  NWKernelRegression scalar(NWKernelRegressionOptions(1), generator);
  NWKernelRegression vector(NWKernelRegressionOptions(49), generator);
  const auto named = vector.named_parameters();
  REQUIRE(named.size() == 1);
  CHECK(named[0].first == "w");
  CHECK(scalar.w.shape() == Shape{1});
  CHECK(vector.w.shape() == Shape{49});
  CHECK(requires_grad(vector.w));
  for (double w : values_of(vector.w)) {
    CHECK(w >= 0);
    CHECK(w < 1);
  }
  // The same draws as torch.rand((n,)) from this generator.
  Generator replay(5);
  CHECK(values_of(scalar.w) == values_of(rand({1}, replay)));
  CHECK(values_of(vector.w) == values_of(rand({49}, replay)));
  CHECK(scalar.summary().find("NWKernelRegression(weight_count=1)") != std::string::npos);
  CHECK_THROWS_AS(NWKernelRegression(NWKernelRegressionOptions(0), generator), Error);
}

TEST_CASE("with w = 1 the model is the seed's nonparametric attention pooling", "[nw_regression]") {
  Generator generator(4);
  const Dataset data = make_dataset(generator);
  NWKernelRegression model(NWKernelRegressionOptions(1), generator);
  model.w.fill_(1);
  const Pooling learned = predict(model, data.x_test, data.x_train, data.y_train);
  const Pooling fixed = attention_pooling(data.x_test, data.x_train, data.y_train);
  const std::vector<double> expected = values_of(fixed.predictions);
  const std::vector<double> actual = values_of(learned.predictions);
  REQUIRE(actual.size() == expected.size());
  for (size_t i = 0; i < actual.size(); ++i) CHECK(actual[i] == Approx(expected[i]).margin(1e-5));
  REQUIRE(model.attention_weights().shape() == Shape{60, 50});
  require_rows_are_distributions(model.attention_weights());
  CHECK_FALSE(requires_grad(model.attention_weights()));
}

TEST_CASE("a larger w gives sharper attention", "[nw_regression]") {
  const Tensor queries = tensor({0.5});
  const Tensor keys = tensor({{0, 1, 2, 3}});
  const Tensor values = tensor({{0, 1, 2, 3}});
  Generator generator(0);
  NWKernelRegression model(NWKernelRegressionOptions(1), generator);
  double previous_peak = 0;
  for (double w : {0.5, 1.0, 2.0, 4.0}) {
    model.w.fill_(static_cast<real>(w));
    (void)model.forward(queries, keys, values);
    const double peak = model.attention_weights().at({0, 0});
    CHECK(peak > previous_peak);
    previous_peak = peak;
    // The two keys at distance 0.5 always share the weight equally.
    CHECK(model.attention_weights().at({0, 1}) == Approx(peak).margin(kTolerance));
  }
}

TEST_CASE("the vector w pairs one entry with each key slot, predict drops the last pair",
          "[nw_regression]") {
  Generator generator(6);
  const Dataset data = make_dataset(generator);
  NWKernelRegression model(NWKernelRegressionOptions(49), generator);
  const Pooling fit = predict(model, data.x_test, data.x_train, data.y_train);
  REQUIRE(fit.predictions.shape() == Shape{60});
  REQUIRE(fit.attention_weights.shape() == Shape{60, 49});
  require_rows_are_distributions(fit.attention_weights);

  // Only the first 49 pairs matter: changing the last target changes nothing.
  Tensor changed = data.y_train.clone_data();
  changed.set({49}, 100);
  CHECK(values_of(predict(model, data.x_test, data.x_train, changed).predictions) ==
        values_of(fit.predictions));

  // Shapes that do not fit are refused with a message.
  CHECK_THROWS_AS(
      model.forward(data.x_test, repeat(data.x_train, {60, 1}), repeat(data.y_train, {60, 1})),
      Error);
  NWKernelRegression too_long(NWKernelRegressionOptions(51), generator);
  CHECK_THROWS_AS(predict(too_long, data.x_test, data.x_train, data.y_train), Error);
}

TEST_CASE("the model's gradient matches finite differences", "[nw_regression][f64]") {
  Generator generator(11);
  const Dataset data = make_dataset(generator, DatasetOptions().train_size(8));
  const Tensor keys = leave_one_out(data.x_train);
  const Tensor values = leave_one_out(data.y_train);
  for (int64_t weight_count : {int64_t{1}, int64_t{7}}) {
    INFO("weight_count " << weight_count);
    auto model =
        std::make_shared<NWKernelRegression>(NWKernelRegressionOptions(weight_count), generator);
    // Gradients with respect to w, the queries, the keys and the values.
    const GradcheckResult result = gradcheck(
        [&](const std::vector<Tensor>& inputs) {
          model->w = inputs[0];
          return model->forward(inputs[1], inputs[2], inputs[3]);
        },
        {model->w.clone_data() * 3.0, data.x_train, keys, values});
    INFO(result.report);
    CHECK(result.passed);
  }
}

TEST_CASE("one SGD step moves w by −lr · dL/dw, dL/dw written out by hand",
          "[nw_regression][f64]") {
  // L(w) = Σᵢ (Σⱼ αᵢⱼ vᵢⱼ − yᵢ)², αᵢⱼ = softmax_j(sᵢⱼ), sᵢⱼ = −dᵢⱼ² w²/2
  // dL/dw = Σᵢ 2 (f̂ᵢ − yᵢ) Σⱼ vᵢⱼ αᵢⱼ (s'ᵢⱼ − Σₖ αᵢₖ s'ᵢₖ),  s'ᵢⱼ = −dᵢⱼ² w
  Generator generator(9);
  const Dataset data = make_dataset(generator, DatasetOptions().train_size(12));
  NWKernelRegression model(NWKernelRegressionOptions(1), generator);
  const double w = model.w.item();
  const std::vector<double> x = values_of(data.x_train);
  const std::vector<double> y = values_of(data.y_train);
  const size_t n = x.size();
  double loss = 0, slope = 0;
  for (size_t i = 0; i < n; ++i) {
    std::vector<double> scores, derivatives, targets;
    for (size_t j = 0; j < n; ++j) {
      if (j == i) continue;
      const double squared = (x[i] - x[j]) * (x[i] - x[j]);
      scores.push_back(-squared * w * w / 2);
      derivatives.push_back(-squared * w);
      targets.push_back(y[j]);
    }
    const double largest = *std::max_element(scores.begin(), scores.end());
    double total = 0;
    for (double& score : scores) total += (score = std::exp(score - largest));
    double prediction = 0, mean_derivative = 0;
    for (size_t k = 0; k < scores.size(); ++k) {
      scores[k] /= total;  // now α
      prediction += scores[k] * targets[k];
      mean_derivative += scores[k] * derivatives[k];
    }
    double inner = 0;
    for (size_t k = 0; k < scores.size(); ++k) {
      inner += targets[k] * scores[k] * (derivatives[k] - mean_derivative);
    }
    loss += (prediction - y[i]) * (prediction - y[i]);
    slope += 2 * (prediction - y[i]) * inner;
  }

  const TrainResult result =
      train(model, data.x_train, data.y_train, TrainOptions().epochs(1).lr(0.5));
  REQUIRE(result.losses.size() == 1);
  CHECK(result.losses[0] == Approx(loss).epsilon(1e-12));
  CHECK(model.w.item() == Approx(w - 0.5 * slope).epsilon(1e-12));
}

TEST_CASE("TrainingLoss is the loss train() steps on, and differentiates twice",
          "[nw_regression][higher-order][f64]") {
  Generator generator(3);
  const Dataset data = make_dataset(generator, DatasetOptions().train_size(12));
  NWKernelRegression model(NWKernelRegressionOptions(1), generator);
  model.w.fill_(1.5);
  const TrainingLoss training_loss(data.x_train, data.y_train);
  const Tensor loss = training_loss(model);
  // L'(w) with a graph of its own (create_graph), then L''(w) through it.
  const Tensor slope = autograd::grad({loss}, {model.w}, {}, {.create_graph = true})[0];
  const double curvature = autograd::grad({slope}, {model.w})[0].item();
  // L'' against central differences of L' (each L' a plain backward).
  const auto slope_at = [&](double w) {
    model.w.fill_(static_cast<real>(w));
    return autograd::grad({training_loss(model)}, {model.w})[0].item();
  };
  const double epsilon = 1e-5;
  CHECK(curvature ==
        Approx((slope_at(1.5 + epsilon) - slope_at(1.5 - epsilon)) / (2 * epsilon)).epsilon(1e-6));
  // The same number train() records before its first step, to the bit.
  model.w.fill_(1.5);
  const TrainResult result =
      train(model, data.x_train, data.y_train, TrainOptions().epochs(1).lr(0.5));
  CHECK(result.losses[0] == loss.item());
}

TEST_CASE("w = 0 is a stationary point: the loss depends on w only through w²", "[nw_regression]") {
  Generator generator(0);
  const Dataset data = make_dataset(generator);
  NWKernelRegression model(NWKernelRegressionOptions(1), generator);
  model.w.fill_(0);
  const TrainResult result = train(model, data.x_train, data.y_train, TrainOptions().epochs(3));
  CHECK(model.w.item() == 0);
  CHECK(result.losses[0] == result.losses[2]);
  // And w and −w are the same model.
  model.w.fill_(2);
  const std::vector<double> plus =
      values_of(predict(model, data.x_test, data.x_train, data.y_train).predictions);
  model.w.fill_(-2);
  CHECK(values_of(predict(model, data.x_test, data.x_train, data.y_train).predictions) == plus);
}

TEST_CASE("train rejects zero epochs and a non-positive learning rate", "[nw_regression]") {
  Generator generator(0);
  const Dataset data = make_dataset(generator, DatasetOptions().train_size(5));
  NWKernelRegression model(NWKernelRegressionOptions(1), generator);
  CHECK_THROWS_AS(train(model, data.x_train, data.y_train, TrainOptions().epochs(0)), Error);
  CHECK_THROWS_AS(train(model, data.x_train, data.y_train, TrainOptions().lr(0)), Error);
  std::vector<int64_t> epochs_seen;
  const TrainResult result = train(model, data.x_train, data.y_train, TrainOptions().epochs(4),
                                   [&](int64_t epoch, double) { epochs_seen.push_back(epoch); });
  CHECK(epochs_seen == std::vector<int64_t>{1, 2, 3, 4});
  CHECK(result.losses.size() == 4);
  CHECK(result.compute_ms >= 0);
}

// ---------------------------------------------------------------- the seed's results

TEST_CASE("over 20 seeds: average > Gaussian pooling > learned scalar w > learned vector w",
          "[nw_regression]") {
  constexpr int kSeeds = 20;
  double average = 0, attention = 0, scalar = 0, vector = 0;
  for (uint64_t seed = 0; seed < kSeeds; ++seed) {
    INFO("seed " << seed);
    const ExperimentResult one = run_experiment(ExperimentOptions().seed(seed));
    const ExperimentResult many =
        run_experiment(ExperimentOptions().seed(seed).weight_shape(WeightShape::vector));
    // The same data for both runs; only w differs.
    REQUIRE(values_of(one.data.y_train) == values_of(many.data.y_train));
    for (const ExperimentResult* run : {&one, &many}) {
      REQUIRE(run->training.losses.size() == 100);
      CHECK(run->training.losses.back() < 0.8 * run->training.losses.front());
    }
    CHECK(many.w.shape() == Shape{49});
    average += one.mse_average / kSeeds;
    attention += one.mse_attention / kSeeds;
    scalar += one.mse_learned / kSeeds;
    vector += many.mse_learned / kSeeds;
  }
  INFO("average " << average << ", attention " << attention << ", scalar " << scalar << ", vector "
                  << vector);
  CHECK(average > attention);
  CHECK(attention > scalar);
  CHECK(scalar > vector);
  // The figures the seed text reports.
  CHECK(average == Approx(0.8).margin(0.05));
  CHECK(attention == Approx(0.54).margin(0.05));
  CHECK(scalar == Approx(0.3).margin(0.05));
}

TEST_CASE("run_experiment: the chosen kernel is one of the three, MSEs match the predictions",
          "[nw_regression]") {
  const ExperimentResult result =
      run_experiment(ExperimentOptions().seed(3).epochs(5).kernel(Kernel::boxcar).bandwidth(0.5));
  CHECK(result.training.losses.size() == 5);
  CHECK(values_of(result.kernel.predictions) == values_of(result.kernels[1].predictions));
  CHECK(result.mse_kernel == result.mse_kernels[1]);
  CHECK(result.mse_learned ==
        Approx(mean_squared_error(result.learned.predictions, result.data.y_truth)));
  // mean_squared_error itself, by hand.
  CHECK(mean_squared_error(tensor({1, 2, 3}), tensor({1, 4, 0})) == Approx((0 + 4 + 9) / 3.0));
  CHECK_THROWS_AS(mean_squared_error(tensor({1}), tensor({1, 2})), Error);
}

}  // namespace test_nw_regression
