// models/nw_regression/nw_regression.hpp — attention pooling as Nadaraya–Watson kernel
// regression (d2l §10.2, and the study note «NLP学习记录八：理解注意力机制»,
// scongx, CSDN blog).
//
// Legend: N training pairs (50), Q queries (the 60 test inputs), K keys and
// values per query (N for the nonparametric estimators; N − 1 in the
// leave-one-out training of the learned one).
//
// The data: y = f(x) + ε with f(x) = 2·sin(x) + x^0.8 and ε ~ N(0, 0.5²),
// at N inputs drawn uniformly from [0, 5) and sorted; queries 0, 0.1, …, 5.9
// are scored against the noise-free f.
//
// Every estimator here answers a query x with a weighted average of the
// training targets, f̂(x) = Σᵢ α(x, xᵢ) yᵢ with Σᵢ α(x, xᵢ) = 1. They differ
// only in the attention weights α:
//
//   average pooling          αᵢ = 1/N                        (ignores x)
//   attention pooling        αᵢ = softmax_i(−(x − xᵢ)²/2)     (Gaussian, σ = 1)
//   Nadaraya–Watson          αᵢ = K((x − xᵢ)/σ) / Σⱼ K((x − xⱼ)/σ)
//   learned attention        αᵢ = softmax_i(−((x − xᵢ)·w)²/2), w learned by SGD
//
//   Dataset data = make_dataset(generator);
//   Pooling fit = nadaraya_watson(data.x_test, data.x_train, data.y_train,
//                                 Kernel::epanechnikov, 1.0);
//   fit.predictions;        // (Q)
//   fit.attention_weights;  // (Q,N), each row sums to 1
//
//   NWKernelRegression model(NWKernelRegressionOptions(1), generator);
//   train(model, data.x_train, data.y_train, TrainOptions());
//   Pooling learned = predict(model, data.x_test, data.x_train, data.y_train);
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "nn/module.hpp"
#include "tensor/random.hpp"
#include "tensor/tensor.hpp"

namespace attograd::nw_regression {

// ---- The data ---------------------------------------------------------------

struct DatasetOptions {
  // N, the number of training pairs (seed: 50).
  DatasetOptions& train_size(int64_t value) {
    train_size_ = value;
    return *this;
  }
  // Standard deviation of the noise ε on the training targets (seed: 0.5).
  DatasetOptions& noise_stddev(double value) {
    noise_stddev_ = value;
    return *this;
  }
  // Training inputs are uniform in [0, input_limit) (seed: 5).
  DatasetOptions& input_limit(double value) {
    input_limit_ = value;
    return *this;
  }
  // Q, the number of test inputs 0, 0.1, …, (Q − 1)/10 (seed: 60).
  DatasetOptions& test_size(int64_t value) {
    test_size_ = value;
    return *this;
  }

  int64_t train_size() const { return train_size_; }
  double noise_stddev() const { return noise_stddev_; }
  double input_limit() const { return input_limit_; }
  int64_t test_size() const { return test_size_; }

 private:
  int64_t train_size_ = 50;
  double noise_stddev_ = 0.5;
  double input_limit_ = 5.0;
  int64_t test_size_ = 60;
};

struct Dataset {
  Tensor x_train;  // (N), sorted ascending
  Tensor y_train;  // (N), f(x_train) + ε
  Tensor x_test;   // (Q), 0, 0.1, …
  Tensor y_truth;  // (Q), f(x_test), no noise
};

// x: (*) -> (*).  f(x) = 2·sin(x) + x^0.8 (x ≥ 0)
Tensor target_function(const Tensor& x);

// Draws, in this order, the N training inputs (uniform, then sorted) and the
// N noise values from `generator`, like the seed's torch.rand / torch.normal.
Dataset make_dataset(Generator& generator, const DatasetOptions& options = DatasetOptions());

// ---- Nonparametric estimators ----------------------------------------------

// An estimate and the attention weights that produced it.
struct Pooling {
  Tensor predictions;        // (Q)
  Tensor attention_weights;  // (Q,K), rows sum to 1
};

// values: (N) -> (Q).  Every prediction is the mean of the training targets.
Tensor average_pooling(const Tensor& values, int64_t query_count);

// queries: (Q), keys: (N), values: (N) -> (Q), (Q,N).  The seed's
// nonparametric attention pooling, α = softmax_i(−(x − xᵢ)²/2), f̂ = α @ y.
Pooling attention_pooling(const Tensor& queries, const Tensor& keys, const Tensor& values);

enum class Kernel { gaussian, boxcar, epanechnikov };
inline constexpr std::array<Kernel, 3> kAllKernels = {Kernel::gaussian, Kernel::boxcar,
                                                      Kernel::epanechnikov};

std::string_view to_string(Kernel kernel);
// "gaussian", "boxcar" or "epanechnikov"; throws naming the accepted values otherwise.
Kernel kernel_from_string(std::string_view name);

// The kernel K(u) at distance u = (x − xᵢ)/σ, unnormalised (the constant
// cancels in the weighted average):
//   gaussian       exp(−u²/2)
//   boxcar         1 if |u| < 1, else 0
//   epanechnikov   3/4·(1 − u²) if |u| < 1, else 0
// (d2l's "Epanechnikov" max(1 − |u|, 0) is the triangular kernel; this is
// the textbook Epanechnikov kernel, the parabola.)
double kernel_value(Kernel kernel, double u);

// queries: (Q), keys: (N), values: (N) -> (Q), (Q,N).  The Nadaraya–Watson
// estimator with kernel K and bandwidth σ > 0:
//
//   f̂(x) = Σᵢ K((x − xᵢ)/σ) yᵢ / Σⱼ K((x − xⱼ)/σ)
//
// The Gaussian weights are computed as softmax_i(−u²/2) — the same numbers,
// but in log space, so they never all underflow to 0 however far the query
// is. Boxcar and Epanechnikov vanish for |u| ≥ 1: a query farther than σ
// from every key has Σⱼ K = 0, and there the estimate is the value of the
// nearest key (the first of two equally near), its weight 1. That is the
// estimator's own limit as the query leaves the last window — just inside
// it only the nearest key has any weight — so the curve stays continuous
// and never becomes NaN. The predictions are differentiable in `values`
// (and, for the Gaussian, in queries and keys too).
Pooling nadaraya_watson(const Tensor& queries, const Tensor& keys, const Tensor& values,
                        Kernel kernel, double bandwidth);

// ---- Parametric attention pooling --------------------------------------------

struct NWKernelRegressionOptions {
  explicit NWKernelRegressionOptions(int64_t weight_count = 1) : weight_count_(weight_count) {}
  // How many entries w has: 1 (one width shared by every key) or K (one per
  // key slot; the seed uses K = N − 1, the leave-one-out key count).
  NWKernelRegressionOptions& weight_count(int64_t value) {
    weight_count_ = value;
    return *this;
  }

  int64_t weight_count() const { return weight_count_; }

 private:
  int64_t weight_count_;
};

// The seed's NWKernelRegression: α = softmax over the keys of
// −((x − kᵢ)·w)²/2, f̂(x) = Σᵢ αᵢ vᵢ. With a scalar w this is Gaussian
// Nadaraya–Watson with a learned bandwidth σ = 1/|w|.
class NWKernelRegression : public nn::Module {
 public:
  // w starts uniform in [0, 1), like torch.rand((n,)).
  explicit NWKernelRegression(const NWKernelRegressionOptions& options,
                              Generator& generator = default_generator());

  // queries: (Q), keys: (Q,K), values: (Q,K) -> (Q).  Each query has its
  // own row of keys and values (training leaves a different pair out of
  // each); K must equal w's length unless w is a single number.
  Tensor forward(const Tensor& queries, const Tensor& keys, const Tensor& values);
  // scores_unscaled: (Q,1,K), values: (Q,K,1) -> (Q,1,1).  forward() from
  // −(x − k)²/2, the part of the scores that does not depend on w, with
  // everything already in bmm's batch layout: training forms these once.
  Tensor attend(const Tensor& scores_unscaled, const Tensor& values);

  // (Q,K): the weights of the last forward, without history (for plots);
  // undefined before the first.
  Tensor attention_weights() const;
  const NWKernelRegressionOptions& options() const { return options_; }

  Tensor w;  // (weight_count)

 protected:
  std::string extra_repr() const override;

 private:
  NWKernelRegressionOptions options_;
  Tensor attention_weights_;  // (Q,1,K), as attend() made them
};

// x: (N) -> (N, N−1).  Row i holds every entry of x except x[i], in order:
// the (1 − eye(N)) mask picks the off-diagonal entries of x tiled N times.
// Training on these keeps each input from finding itself among its keys
// (which would teach w → ∞, a lookup table).
Tensor leave_one_out(const Tensor& x);

// The seed's training loss as a function of the model's w:
//
//   L(w) = Σᵢ (f̂(xᵢ) − yᵢ)²,  f̂(xᵢ) attending to the N − 1 other pairs
//
// The parts that do not depend on w — −(xᵢ − xⱼ)²/2 for j ≠ i, the values and
// the targets, in bmm's layout — are formed once, here; each call runs the
// model's attend() on them, so the loss has a graph to model.w: train()
// differentiates it once per SGD step, examples/higher_order.cpp twice per
// Newton step.
class TrainingLoss {
 public:
  // x_train, y_train: (N), N ≥ 2.
  TrainingLoss(const Tensor& x_train, const Tensor& y_train);
  // -> (): L at the model's current w.
  Tensor operator()(NWKernelRegression& model) const;

 private:
  Tensor scores_unscaled_;  // (N,1,N−1)
  Tensor value_columns_;    // (N,N−1,1)
  Tensor targets_;          // (N,1,1)
};

struct TrainOptions {
  // Passes over the training pairs, one SGD step each (seed: 100).
  TrainOptions& epochs(int64_t value) {
    epochs_ = value;
    return *this;
  }
  // SGD's learning rate (seed: 0.5).
  TrainOptions& lr(double value) {
    lr_ = value;
    return *this;
  }

  int64_t epochs() const { return epochs_; }
  double lr() const { return lr_; }

 private:
  int64_t epochs_ = 100;
  double lr_ = 0.5;
};

struct TrainResult {
  std::vector<double> losses;  // Σᵢ (f̂(xᵢ) − yᵢ)² before each epoch's step
  // CPU time of forward + backward + step over all epochs (this thread's,
  // so a busy machine does not inflate it; on_epoch is not counted).
  double compute_ms = 0;
};

// The seed's loop: TrainingLoss (leave-one-out keys and values, the
// unreduced squared error summed over the N inputs), plain SGD on w. `on_epoch(epoch, loss)`
// (epochs count from 1) is called after each step. `stop_requested` (if set)
// is asked before every step; true ends the training there (after at least
// one step), with fewer losses than epochs.
TrainResult train(NWKernelRegression& model, const Tensor& x_train, const Tensor& y_train,
                  const TrainOptions& options,
                  const std::function<void(int64_t epoch, double loss)>& on_epoch = {},
                  const std::function<bool()>& stop_requested = {});

// queries: (Q), keys: (N), values: (N) -> (Q), (Q,K).  The trained model
// answers every query with the same keys: all N pairs for a scalar w; for a
// w of K entries, the first K pairs (the seed drops the last training pair so
// that N − 1 keys meet N − 1 weights). Runs without recording a graph.
Pooling predict(NWKernelRegression& model, const Tensor& queries, const Tensor& keys,
                const Tensor& values);

// ---- The whole experiment -------------------------------------------------------

enum class WeightShape { scalar, vector };
std::string_view to_string(WeightShape shape);
WeightShape weight_shape_from_string(std::string_view name);

struct ExperimentOptions {
  ExperimentOptions& seed(uint64_t value) {
    seed_ = value;
    return *this;
  }
  ExperimentOptions& epochs(int64_t value) {
    epochs_ = value;
    return *this;
  }
  ExperimentOptions& lr(double value) {
    lr_ = value;
    return *this;
  }
  // The kernel and bandwidth of the nonparametric Nadaraya–Watson estimator.
  ExperimentOptions& kernel(Kernel value) {
    kernel_ = value;
    return *this;
  }
  ExperimentOptions& bandwidth(double value) {
    bandwidth_ = value;
    return *this;
  }
  ExperimentOptions& weight_shape(WeightShape value) {
    weight_shape_ = value;
    return *this;
  }

  uint64_t seed() const { return seed_; }
  int64_t epochs() const { return epochs_; }
  double lr() const { return lr_; }
  Kernel kernel() const { return kernel_; }
  double bandwidth() const { return bandwidth_; }
  WeightShape weight_shape() const { return weight_shape_; }

 private:
  uint64_t seed_ = 0;
  int64_t epochs_ = 100;
  double lr_ = 0.5;
  Kernel kernel_ = Kernel::gaussian;
  double bandwidth_ = 1.0;
  WeightShape weight_shape_ = WeightShape::scalar;
};

struct ExperimentResult {
  Dataset data;
  Tensor average;                  // (Q)
  Pooling attention;               // the seed's Gaussian attention pooling, σ = 1
  Pooling kernel;                  // options.kernel at options.bandwidth
  std::array<Pooling, 3> kernels;  // every kernel at options.bandwidth, in kAllKernels order
  Pooling learned;                 // the trained NWKernelRegression
  Tensor learned_keys;             // (K): the training inputs the learned model attends to
  Tensor w;                        // the learned w, a copy
  TrainResult training;
  // Test mean squared errors against the noise-free truth.
  double mse_average = 0;
  double mse_attention = 0;
  double mse_kernel = 0;
  std::array<double, 3> mse_kernels{};
  double mse_learned = 0;
};

// One run from one seed: data, then w's initial values, all drawn from a
// Generator seeded with options.seed.
// stop_requested as train's.
ExperimentResult run_experiment(
    const ExperimentOptions& options,
    const std::function<void(int64_t epoch, double loss)>& on_epoch = {},
    const std::function<bool()>& stop_requested = {});

// prediction, truth: (Q) -> the mean of (prediction − truth)², as a double.
double mean_squared_error(const Tensor& prediction, const Tensor& truth);

}  // namespace attograd::nw_regression
