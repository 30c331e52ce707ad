// models/nw_regression/nw_regression.cpp — the data, the four estimators, and the
// leave-one-out SGD training of the learned attention width (see the header
// for the maths).
#include "models/nw_regression/nw_regression.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <limits>

#include "autograd/ops.hpp"
#include "nn/loss.hpp"
#include "nn/optim.hpp"
#include "tensor/error.hpp"
#include "tensor/factory.hpp"

namespace attograd::nw_regression {

namespace {

void check_vector(const char* op, const char* name, const Tensor& t) {
  check(t.defined(), "{}: {} is undefined", op, name);
  check(t.dim() == 1, "{}: {} must be 1-D, got shape {}", op, name, t.shape());
}

// queries: (Q), keys: (N), values: (N): the shapes every nonparametric estimator takes.
void check_pooling_inputs(const char* op, const Tensor& queries, const Tensor& keys,
                          const Tensor& values) {
  check_vector(op, "queries", queries);
  check_vector(op, "keys", keys);
  check_vector(op, "values", values);
  check(keys.numel() == values.numel(), "{}: {} keys but {} values; give one value per key", op,
        keys.numel(), values.numel());
  check(keys.numel() > 0, "{}: there are no keys to attend to", op);
}

// weights: (Q,N), values: (N) -> (Q).  f̂ = α @ y
Tensor weighted_average(const Tensor& weights, const Tensor& values) {
  return reshape(matmul(weights, unsqueeze(values, 1)), {weights.size(0)});
}

// The CPU time this thread has used, in milliseconds. Unlike a wall clock it
// does not count the time other programs on a busy machine take.
double thread_cpu_ms() {
  timespec now{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) * 1e3 + static_cast<double>(now.tv_nsec) * 1e-6;
}

// queries: (Q), keys: (Q,K) -> (Q,1,K).  −(x − k)²/2, the part of the
// learned estimator's scores that does not depend on w, each query against
// its own row of keys (queries repeated K times), in bmm's batch layout.
Tensor unscaled_scores(const Tensor& queries, const Tensor& keys) {
  const int64_t q = keys.size(0);
  const int64_t k = keys.size(1);
  const Tensor distances = reshape(repeat_interleave(queries, k, 0), {q, k}) - keys;  // (Q,K)
  return reshape(distances * distances * real(-0.5), {q, 1, k});
}

}  // namespace

// ---- The data ---------------------------------------------------------------

Tensor target_function(const Tensor& x) { return 2.0 * sin(x) + pow(x, 0.8); }

Dataset make_dataset(Generator& generator, const DatasetOptions& options) {
  const int64_t n = options.train_size();
  check(n >= 1, "make_dataset: train_size must be at least 1, got {}", n);
  check(options.noise_stddev() >= 0, "make_dataset: noise_stddev must be >= 0, got {}",
        options.noise_stddev());
  check(options.input_limit() > 0, "make_dataset: input_limit must be positive, got {}",
        options.input_limit());
  check(options.test_size() >= 1, "make_dataset: test_size must be at least 1, got {}",
        options.test_size());
  NoGradGuard no_grad;

  // x_train, _ = torch.sort(torch.rand(n) * 5)
  std::vector<real> inputs =
      (rand({n}, generator) * static_cast<real>(options.input_limit())).to_vector();
  std::sort(inputs.begin(), inputs.end());
  Dataset data;
  data.x_train = from_vector(inputs);
  // y_train = f(x_train) + torch.normal(0.0, 0.5, (n,))
  data.y_train =
      target_function(data.x_train) + normal({n}, 0.0, options.noise_stddev(), generator);

  // 0, 0.1, …: i/10 rounds once, where arange's repeated 0.1 steps would drift.
  std::vector<real> tests(static_cast<size_t>(options.test_size()));
  for (size_t i = 0; i < tests.size(); ++i)
    tests[i] = static_cast<real>(static_cast<double>(i) / 10);
  data.x_test = from_vector(tests);
  data.y_truth = target_function(data.x_test);
  return data;
}

// ---- Nonparametric estimators ----------------------------------------------

Tensor average_pooling(const Tensor& values, int64_t query_count) {
  check_vector("average_pooling", "values", values);
  check(values.numel() > 0, "average_pooling: there are no values to average");
  check(query_count >= 0, "average_pooling: query_count must be >= 0, got {}", query_count);
  // y_train.mean().repeat(n)
  return repeat(mean(values), {query_count});
}

// α = softmax over i of −(x − xᵢ)²/2, with x repeated along the keys as in
// the seed (X_repeat, here by repeat_interleave).
Pooling attention_pooling(const Tensor& queries, const Tensor& keys, const Tensor& values) {
  check_pooling_inputs("attention_pooling", queries, keys, values);
  const int64_t q = queries.numel();
  const int64_t n = keys.numel();
  const Tensor queries_repeated = reshape(repeat_interleave(queries, n, 0), {q, n});  // (Q,N)
  const Tensor weights = softmax(-pow(queries_repeated - keys, 2) / 2.0, 1);          // (Q,N)
  return {weighted_average(weights, values), detach(weights)};
}

std::string_view to_string(Kernel kernel) {
  switch (kernel) {
    case Kernel::gaussian:
      return "gaussian";
    case Kernel::boxcar:
      return "boxcar";
    case Kernel::epanechnikov:
      return "epanechnikov";
  }
  fail("to_string: unknown Kernel value {}", static_cast<int>(kernel));
}

Kernel kernel_from_string(std::string_view name) {
  for (Kernel kernel : kAllKernels) {
    if (to_string(kernel) == name) return kernel;
  }
  fail("kernel_from_string: unknown kernel '{}'; expected gaussian|boxcar|epanechnikov", name);
}

double kernel_value(Kernel kernel, double u) {
  switch (kernel) {
    case Kernel::gaussian:
      return std::exp(-u * u / 2);
    case Kernel::boxcar:
      return std::abs(u) < 1 ? 1.0 : 0.0;
    case Kernel::epanechnikov:
      return std::abs(u) < 1 ? 0.75 * (1 - u * u) : 0.0;
  }
  fail("kernel_value: unknown Kernel value {}", static_cast<int>(kernel));
}

Pooling nadaraya_watson(const Tensor& queries, const Tensor& keys, const Tensor& values,
                        Kernel kernel, double bandwidth) {
  check_pooling_inputs("nadaraya_watson", queries, keys, values);
  check(std::isfinite(bandwidth) && bandwidth > 0,
        "nadaraya_watson: bandwidth must be a positive finite number, got {}", bandwidth);
  const int64_t q = queries.numel();
  const int64_t n = keys.numel();

  if (kernel == Kernel::gaussian) {
    // K(u)/Σ K = exp(−u²/2)/Σ exp(−u²/2) = softmax(−u²/2): log space, never all zero.
    const Tensor distances =
        (unsqueeze(queries, 1) - unsqueeze(keys, 0)) / static_cast<real>(bandwidth);  // (Q,N)
    const Tensor weights = softmax(-pow(distances, 2) / 2.0, 1);
    return {weighted_average(weights, values), detach(weights)};
  }

  // Compact kernels: K_ij = K((x_i − x_j)/σ), each row divided by its sum.
  const std::vector<real> query_inputs = queries.to_vector();
  const std::vector<real> key_inputs = keys.to_vector();
  Tensor weights = Tensor::empty({q, n});
  real* row = weights.data();
  for (int64_t i = 0; i < q; ++i, row += n) {
    double total = 0;
    int64_t nearest = 0;
    double nearest_distance = std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < n; ++j) {
      const double distance = static_cast<double>(query_inputs[i]) - key_inputs[j];
      const double k = kernel_value(kernel, distance / bandwidth);
      row[j] = static_cast<real>(k);
      total += k;
      if (std::abs(distance) < nearest_distance) {  // strict: the first of equals stays
        nearest = j;
        nearest_distance = std::abs(distance);
      }
    }
    if (total > 0) {
      for (int64_t j = 0; j < n; ++j) row[j] = static_cast<real>(row[j] / total);
    } else {
      // Outside every window: the nearest key's value (the estimator's limit there).
      std::fill(row, row + n, real(0));
      row[nearest] = 1;
    }
  }
  return {weighted_average(weights, values), weights};
}

// ---- Parametric attention pooling --------------------------------------------

NWKernelRegression::NWKernelRegression(const NWKernelRegressionOptions& options,
                                       Generator& generator)
    : nn::Module("NWKernelRegression"), options_(options) {
  check(options.weight_count() >= 1, "NWKernelRegression: weight_count must be at least 1, got {}",
        options.weight_count());
  // self.w = nn.Parameter(torch.rand((n,)))
  w = register_parameter("w", rand({options.weight_count()}, generator));
}

std::string NWKernelRegression::extra_repr() const {
  return fmt::format("weight_count={}", options_.weight_count());
}

// queries (Q) are repeated K times to meet their rows of keys (Q,K). Since
// ((x − k)·w)²/2 = (x − k)²/2 · w², the part that does not depend on w —
// −(x − k)²/2 — is formed first, already in the (Q,1,K) layout bmm wants,
// and attend() scales it by w².
Tensor NWKernelRegression::forward(const Tensor& queries, const Tensor& keys,
                                   const Tensor& values) {
  check_vector("NWKernelRegression", "queries", queries);
  check(keys.defined() && keys.dim() == 2,
        "NWKernelRegression: keys must be (Q,K), one row per query, got {}",
        keys.defined() ? keys.shape() : Shape{});
  check(values.defined() && values.shape() == keys.shape(),
        "NWKernelRegression: keys and values must both be (Q,K), got {} and {}", keys.shape(),
        values.defined() ? values.shape() : Shape{});
  const int64_t q = queries.numel();
  const int64_t k = keys.size(1);
  check(keys.size(0) == q, "NWKernelRegression: {} queries but {} rows of keys; give one row each",
        q, keys.size(0));
  return reshape(attend(unscaled_scores(queries, keys), reshape(values, {q, k, 1})), {q});
}

//   s = −(x − k)²/2 · w²                                   (Q,1,K), w² broadcast along K
//   α = softmax_k(s)                                       (Q,1,K)
//   f̂ = bmm(α, v)                                          (Q,1,K) @ (Q,K,1) → (Q,1,1)
// The three lines are attention pooling with w² as the scores' scale: the op
// attention_pool, one fused node on the fast path, those three ops on the
// reference path.
Tensor NWKernelRegression::attend(const Tensor& scores_unscaled, const Tensor& values) {
  const bool shapes_ok =
      scores_unscaled.defined() && values.defined() && scores_unscaled.dim() == 3 &&
      values.dim() == 3 && scores_unscaled.size(1) == 1 && values.size(2) == 1 &&
      scores_unscaled.size(0) == values.size(0) && scores_unscaled.size(2) == values.size(1);
  check(shapes_ok,
        "NWKernelRegression::attend: expected scores (Q,1,K) and values (Q,K,1), got {} and {}",
        scores_unscaled.defined() ? scores_unscaled.shape() : Shape{},
        values.defined() ? values.shape() : Shape{});
  const int64_t k = values.size(1);
  check(k >= 1, "NWKernelRegression: keys {} have no columns to attend to", values.shape());
  check(options_.weight_count() == 1 || options_.weight_count() == k,
        "NWKernelRegression: w has {} entries but each query has {} keys; use a scalar w "
        "(weight_count 1) or one entry per key",
        options_.weight_count(), k);

  return attention_pool(scores_unscaled, values, w * w, &attention_weights_);  // (Q,1,1)
}

Tensor NWKernelRegression::attention_weights() const {
  if (!attention_weights_.defined()) return Tensor();
  return reshape(attention_weights_, {attention_weights_.size(0), attention_weights_.size(2)});
}

Tensor leave_one_out(const Tensor& x) {
  check_vector("leave_one_out", "x", x);
  const int64_t n = x.numel();
  check(n >= 2, "leave_one_out: needs at least 2 entries, got {}", n);
  // X_tile[(1 - torch.eye(n)).type(torch.bool)].reshape((n, -1))
  const Tensor tiled = repeat(x, {n, 1});  // (N,N), row i is x
  return reshape(masked_select(tiled, 1.0 - eye(n)), {n, n - 1});
}

TrainingLoss::TrainingLoss(const Tensor& x_train, const Tensor& y_train) {
  check_pooling_inputs("nw_regression::TrainingLoss", x_train, x_train, y_train);
  const Tensor keys = leave_one_out(x_train);    // (N, N−1)
  const Tensor values = leave_one_out(y_train);  // (N, N−1)
  // forward(x_train, keys, values) without the parts that are the same for
  // every w: −(x_i − x_j)²/2 for j ≠ i, and every tensor in bmm's layout.
  const int64_t n = x_train.numel();
  NoGradGuard no_grad;
  scores_unscaled_ = unscaled_scores(x_train, keys);  // (N,1,N−1)
  value_columns_ = reshape(values, {n, n - 1, 1});    // (N,N−1,1)
  targets_ = reshape(y_train, {n, 1, 1});             // (N,1,1)
}

// The seed's loss(net(…), y).sum() with an unreduced MSE: Σᵢ (f̂(xᵢ) − yᵢ)²,
// which mse_loss's sum reduction forms as one graph node.
Tensor TrainingLoss::operator()(NWKernelRegression& model) const {
  return nn::mse_loss(model.attend(scores_unscaled_, value_columns_), targets_, nn::Reduction::sum);
}

TrainResult train(NWKernelRegression& model, const Tensor& x_train, const Tensor& y_train,
                  const TrainOptions& options,
                  const std::function<void(int64_t epoch, double loss)>& on_epoch,
                  const std::function<bool()>& stop_requested) {
  check_pooling_inputs("nw_regression::train", x_train, x_train, y_train);
  check(options.epochs() >= 1, "nw_regression::train: epochs must be at least 1, got {}",
        options.epochs());
  check(std::isfinite(options.lr()) && options.lr() > 0,
        "nw_regression::train: lr must be a positive finite number, got {}", options.lr());
  const TrainingLoss training_loss(x_train, y_train);

  nn::SGD optimizer(model.named_parameters(), nn::SGDOptions(options.lr()));
  TrainResult result;
  // Only the compute is timed: the clock stops while on_epoch runs.
  double start = thread_cpu_ms();
  for (int64_t epoch = 1; epoch <= options.epochs(); ++epoch) {
    if (stop_requested && stop_requested() && epoch > 1) break;
    optimizer.zero_grad();
    const Tensor loss = training_loss(model);
    backward(loss);
    optimizer.step();
    result.losses.push_back(loss.item());
    if (on_epoch) {
      result.compute_ms += thread_cpu_ms() - start;
      on_epoch(epoch, result.losses.back());
      start = thread_cpu_ms();
    }
  }
  result.compute_ms += thread_cpu_ms() - start;
  return result;
}

Pooling predict(NWKernelRegression& model, const Tensor& queries, const Tensor& keys,
                const Tensor& values) {
  check_pooling_inputs("nw_regression::predict", queries, keys, values);
  const int64_t n = keys.numel();
  const int64_t k = model.options().weight_count() == 1 ? n : model.options().weight_count();
  check(k <= n, "nw_regression::predict: w has {} entries but there are only {} training pairs", k,
        n);
  NoGradGuard no_grad;
  // keys = x_train[:K].repeat((n_test, 1)), and the same for the values.
  const int64_t q = queries.numel();
  const Tensor key_rows = repeat(slice(keys, 0, 0, k), {q, 1});
  const Tensor value_rows = repeat(slice(values, 0, 0, k), {q, 1});
  Tensor predictions = model.forward(queries, key_rows, value_rows);
  return {predictions, model.attention_weights()};
}

// ---- The whole experiment -------------------------------------------------------

std::string_view to_string(WeightShape shape) {
  return shape == WeightShape::scalar ? "scalar" : "vector";
}

WeightShape weight_shape_from_string(std::string_view name) {
  if (name == "scalar") return WeightShape::scalar;
  if (name == "vector") return WeightShape::vector;
  fail("weight_shape_from_string: unknown shape '{}'; expected scalar|vector", name);
}

double mean_squared_error(const Tensor& prediction, const Tensor& truth) {
  check(prediction.defined() && truth.defined() && prediction.shape() == truth.shape(),
        "mean_squared_error: prediction {} and truth {} must have the same shape",
        prediction.defined() ? prediction.shape() : Shape{},
        truth.defined() ? truth.shape() : Shape{});
  check(truth.numel() > 0, "mean_squared_error: nothing to compare");
  const std::vector<real> predicted = prediction.to_vector();
  const std::vector<real> expected = truth.to_vector();
  double total = 0;
  for (size_t i = 0; i < predicted.size(); ++i) {
    const double error = static_cast<double>(predicted[i]) - static_cast<double>(expected[i]);
    total += error * error;
  }
  return total / static_cast<double>(predicted.size());
}

ExperimentResult run_experiment(const ExperimentOptions& options,
                                const std::function<void(int64_t epoch, double loss)>& on_epoch,
                                const std::function<bool()>& stop_requested) {
  Generator generator(options.seed());
  ExperimentResult result;
  result.data = make_dataset(generator);
  const Dataset& data = result.data;
  const int64_t n = data.x_train.numel();
  const int64_t q = data.x_test.numel();

  result.average = average_pooling(data.y_train, q);
  result.attention = attention_pooling(data.x_test, data.x_train, data.y_train);
  for (size_t i = 0; i < kAllKernels.size(); ++i) {
    result.kernels[i] = nadaraya_watson(data.x_test, data.x_train, data.y_train, kAllKernels[i],
                                        options.bandwidth());
    if (kAllKernels[i] == options.kernel()) result.kernel = result.kernels[i];
  }

  const int64_t weight_count = options.weight_shape() == WeightShape::scalar ? 1 : n - 1;
  NWKernelRegression model(NWKernelRegressionOptions(weight_count), generator);
  result.training =
      train(model, data.x_train, data.y_train,
            TrainOptions().epochs(options.epochs()).lr(options.lr()), on_epoch, stop_requested);
  result.learned = predict(model, data.x_test, data.x_train, data.y_train);
  result.learned_keys = slice(data.x_train, 0, 0, result.learned.attention_weights.size(1));
  result.w = model.w.clone_data();

  result.mse_average = mean_squared_error(result.average, data.y_truth);
  result.mse_attention = mean_squared_error(result.attention.predictions, data.y_truth);
  result.mse_kernel = mean_squared_error(result.kernel.predictions, data.y_truth);
  for (size_t i = 0; i < kAllKernels.size(); ++i) {
    result.mse_kernels[i] = mean_squared_error(result.kernels[i].predictions, data.y_truth);
  }
  result.mse_learned = mean_squared_error(result.learned.predictions, data.y_truth);
  return result;
}

}  // namespace attograd::nw_regression
