// examples/nw_regression.cpp — attention pooling as Nadaraya–Watson kernel
// regression, from the study note «NLP学习记录八：理解注意力机制» (scongx,
// CSDN blog).
//
// Fits y = 2·sin(x) + x^0.8 + ε from 50 noisy samples with four estimators —
// average pooling, Gaussian attention pooling, Nadaraya–Watson with a chosen
// kernel, and attention pooling with a learned width w — prints each one's
// test error, and draws the fits, the training loss, the attention weights
// and the kernels as SVG pictures (models/nw_regression/nw_regression.hpp has the maths).
//
//   nw_regression                          # 100 epochs, scalar w, pictures in out/nw_regression
//   nw_regression --epochs 5 --w vector    # the seed's short schedule, one w per key
//   nw_regression --kernel boxcar --bandwidth 0.5
//   nw_regression --seeds 20               # mean test errors over seeds 0…19 (a table)
//   nw_regression --json                   # one summary line for scripts
#include "models/nw_regression/nw_regression.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "examples/common/cli.hpp"
#include "examples/common/divergence.hpp"
#include "examples/common/inspect_tools.hpp"
#include "examples/common/interrupt.hpp"
#include "examples/common/output_folder.hpp"
#include "examples/common/paths_apart.hpp"
#include "examples/common/run_report.hpp"
#include "plot/svg_plot.hpp"
#include "tensor/atomic_file.hpp"
#include "tensor/printable.hpp"

using namespace attograd;
using namespace attograd::nw_regression;

namespace {

// The limits of the flags that count work: --epochs at 1000 times the
// seed's 100 (about 2 s, and the loss curve, one point per epoch, 1.4 MB of
// SVG: 10,000 epochs took 0.22 s and wrote 143 KB), --seeds at 10,000 runs
// of each learned shape. A mistyped 2000000000 is refused instead of running
// for hours.
constexpr int kMaxEpochs = 100000;
constexpr int kMaxSeeds = 10000;

struct Flags {
  std::int64_t seed = 0;
  int epochs = 100;
  double lr = 0.5;
  std::string kernel = "gaussian";
  double bandwidth = 1.0;
  std::string w = "scalar";
  std::string out = "out/nw_regression";
  bool json = false;
  int seeds = 1;
  cli::InspectFlags inspect;  // --dot, --detect-anomaly, --profile
};

// Seeds --seed … --seed + --seeds − 1 are all int64 values (what --seed
// accepts and the report prints), so the last may not pass the largest.
void check_seed_range(const Flags& flags) {
  const std::int64_t largest = std::numeric_limits<std::int64_t>::max();
  if (flags.seed > largest - (flags.seeds - 1)) {
    throw cli::UsageError(fmt::format(
        "--seed {} with --seeds {}: the last seed, --seed + --seeds - 1, would pass {}, the "
        "largest seed; use a --seed of at most {}",
        flags.seed, flags.seeds, largest, largest - (flags.seeds - 1)));
  }
}

ExperimentOptions experiment_options(const Flags& flags, uint64_t seed, WeightShape shape) {
  return ExperimentOptions()
      .seed(seed)
      .epochs(flags.epochs)
      .lr(flags.lr)
      .kernel(kernel_from_string(flags.kernel))
      .bandwidth(flags.bandwidth)
      .weight_shape(shape);
}

std::vector<double> to_doubles(const Tensor& t) {
  const std::vector<real> values = t.to_vector();
  return {values.begin(), values.end()};
}

std::string kernel_title(Kernel kernel) {
  switch (kernel) {
    case Kernel::gaussian:
      return "Gaussian";
    case Kernel::boxcar:
      return "Boxcar";
    case Kernel::epanechnikov:
      return "Epanechnikov";
  }
  return "";
}

// The learned w in words: "w = 2.31" or "w: 49 entries, mean 1.87".
std::string describe_w(const Tensor& w) {
  const std::vector<double> values = to_doubles(w);
  if (values.size() == 1) return fmt::format("w = {:.3g}", values[0]);
  double total = 0;
  for (double value : values) total += value;
  return fmt::format("w: {} entries, mean {:.3g}", values.size(),
                     total / static_cast<double>(values.size()));
}

double mean_of(const Tensor& t) {
  const std::vector<double> values = to_doubles(t);
  double total = 0;
  for (double value : values) total += value;
  return total / static_cast<double>(values.size());
}

// ---------------------------------------------------------------- pictures

// One y range for every fit, so the pictures can be compared side by side.
std::pair<double, double> fit_y_limits(const Dataset& data) {
  std::vector<double> all = to_doubles(data.y_train);
  const std::vector<double> truth = to_doubles(data.y_truth);
  all.insert(all.end(), truth.begin(), truth.end());
  const auto [low, high] = std::minmax_element(all.begin(), all.end());
  return {std::floor(*low - 0.5), std::ceil(*high + 0.5)};
}

// Truth, prediction and the training samples over the test inputs.
plot::LineChart fit_chart(const Dataset& data, const std::string& title, const std::string& name,
                          const Tensor& prediction) {
  const auto [low, high] = fit_y_limits(data);
  plot::LineChart chart;
  chart.title(title)
      .x_label("x")
      .y_label("y")
      .x_limits(0, 6)
      .y_limits(low, high)
      .legend(plot::LegendPosition::lower_left)
      .line("Truth", to_doubles(data.x_test), to_doubles(data.y_truth))
      .line(name, to_doubles(data.x_test), to_doubles(prediction), {.dashed = true})
      .scatter("Training samples", to_doubles(data.x_train), to_doubles(data.y_train),
               {.alpha = 0.5});
  return chart;
}

plot::Heatmap attention_heatmap(const std::string& title, const Pooling& pooling,
                                const Tensor& queries, const Tensor& keys) {
  const std::size_t rows = static_cast<std::size_t>(pooling.attention_weights.size(0));
  const std::size_t cols = static_cast<std::size_t>(pooling.attention_weights.size(1));
  plot::Heatmap heatmap(rows, cols, to_doubles(pooling.attention_weights));
  heatmap.title(title)
      .x_label("Sorted training inputs (keys)")
      .y_label("Test inputs (queries)")
      .row_values(to_doubles(queries))
      .column_values(to_doubles(keys))
      .colormap(plot::Colormap::reds())
      .colorbar_label("Attention weight")
      .size(560, 560);
  return heatmap;
}

// The three kernels' fits at one bandwidth.
plot::LineChart kernels_fit_chart(const ExperimentResult& result, const std::string& sigma) {
  const Dataset& data = result.data;
  const auto [low, high] = fit_y_limits(data);
  plot::LineChart chart;
  chart.title(fmt::format("Nadaraya–Watson with three kernels, {}", sigma))
      .x_label("x")
      .y_label("y")
      .x_limits(0, 6)
      .y_limits(low, high)
      .legend(plot::LegendPosition::lower_left)
      .line("Truth", to_doubles(data.x_test), to_doubles(data.y_truth));
  for (std::size_t i = 0; i < kAllKernels.size(); ++i) {
    chart.line(fmt::format("{} (MSE {:.3f})", kernel_title(kAllKernels[i]), result.mse_kernels[i]),
               to_doubles(data.x_test), to_doubles(result.kernels[i].predictions),
               {.dashed = true});
  }
  chart.scatter("Training samples", to_doubles(data.x_train), to_doubles(data.y_train),
                {.alpha = 0.4});
  return chart;
}

// The training loss of the learned attention, one point per epoch.
plot::LineChart loss_chart(const Flags& flags, const ExperimentResult& result) {
  std::vector<double> epochs;
  for (std::size_t i = 0; i < result.training.losses.size(); ++i) {
    epochs.push_back(static_cast<double>(i + 1));
  }
  plot::LineChart chart;
  chart.title(fmt::format("Training loss, {} w, lr {:g}", flags.w, flags.lr))
      .x_label("Epoch")
      .y_label("Σ squared error (leave-one-out)")
      .line("Training loss", epochs, result.training.losses);
  return chart;
}

// The kernels' shapes, K(u) for u = (x − xᵢ)/σ.
plot::LineChart kernel_shapes_chart() {
  std::vector<double> us;
  for (int i = 0; i <= 1000; ++i) us.push_back(-3.0 + 6.0 * i / 1000);
  plot::LineChart chart;
  chart.title("Kernels K(u), u = (x − xᵢ)/σ")
      .x_label("u")
      .y_label("K(u)")
      .y_limits(0, 1.1)
      .legend(plot::LegendPosition::upper_right);
  for (Kernel each : kAllKernels) {
    std::vector<double> values;
    for (double u : us) values.push_back(kernel_value(each, u));
    chart.line(kernel_title(each), us, values);
  }
  return chart;
}

// Every picture of one run, as (file name, SVG text); nothing is written yet.
std::vector<std::pair<std::string, std::string>> draw_pictures(const Flags& flags,
                                                               const ExperimentResult& result) {
  const Dataset& data = result.data;
  const Kernel kernel = kernel_from_string(flags.kernel);
  const std::string sigma = fmt::format("σ = {:g}", flags.bandwidth);
  const std::string learned_name =
      fmt::format("Learned attention ({} w)", flags.w == "scalar" ? "scalar" : "vector");
  std::vector<std::pair<std::string, std::string>> pictures;

  pictures.emplace_back(
      "nw_fit_average.svg",
      fit_chart(data, fmt::format("Average pooling — test MSE {:.3f}", result.mse_average),
                "Average pooling", result.average)
          .to_svg());
  pictures.emplace_back(
      "nw_fit_nonparametric.svg",
      fit_chart(data,
                fmt::format("Nadaraya–Watson, {} kernel, {} — test MSE {:.3f}",
                            kernel_title(kernel), sigma, result.mse_kernel),
                fmt::format("{} kernel", kernel_title(kernel)), result.kernel.predictions)
          .to_svg());
  pictures.emplace_back(
      "nw_fit_learned.svg",
      fit_chart(data,
                fmt::format("Learned attention, {}, {} epochs — test MSE {:.3f}",
                            describe_w(result.w), flags.epochs, result.mse_learned),
                learned_name, result.learned.predictions)
          .to_svg());
  pictures.emplace_back("nw_fit_kernels.svg", kernels_fit_chart(result, sigma).to_svg());
  pictures.emplace_back("nw_loss.svg", loss_chart(flags, result).to_svg());
  pictures.emplace_back("nw_attention_nonparametric.svg",
                        attention_heatmap(fmt::format("Attention weights, {} kernel, {}",
                                                      kernel_title(kernel), sigma),
                                          result.kernel, data.x_test, data.x_train)
                            .to_svg());
  pictures.emplace_back(
      "nw_attention_learned.svg",
      attention_heatmap(fmt::format("Attention weights, learned {}", describe_w(result.w)),
                        result.learned, data.x_test, result.learned_keys)
          .to_svg());
  pictures.emplace_back("nw_kernels.svg", kernel_shapes_chart().to_svg());
  return pictures;
}

// ---------------------------------------------------------------- report.html

// The width slider's part of the page: the Gaussian attention pooling of the
// seed, f̂(x) = Σᵢ softmax_i(−((x − xᵢ)w)²/2) yᵢ, recomputed in the browser
// from the data below for the w the slider gives (the learned w marked).
constexpr const char* kWidthSliderHtml =
    R"(<p><label>w <input type="range" id="nw-w" min="0.05" max="20" step="0.05"></label>
<span id="nw-w-value"></span> (learned: <span id="nw-w-learned"></span>; test MSE <span id="nw-mse"></span>)</p>
<div class="pictures"><svg id="nw-fit" width="560" height="360" viewBox="0 0 560 360"></svg>
<svg id="nw-weights" width="400" height="400" viewBox="0 0 400 400"></svg></div>
)";

constexpr const char* kWidthSliderScript = R"((function () {
  var d = NW_DATA, ns = 'http://www.w3.org/2000/svg';
  var slider = document.getElementById('nw-w'), fit = document.getElementById('nw-fit');
  var heat = document.getElementById('nw-weights');
  function el(parent, name, attrs) {
    var e = document.createElementNS(ns, name);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    parent.appendChild(e);
    return e;
  }
  // The fit: truth, the samples and the pooled prediction over x in [0, 6].
  var lo = Math.min.apply(null, d.y_train.concat(d.truth)) - 0.5;
  var hi = Math.max.apply(null, d.y_train.concat(d.truth)) + 0.5;
  function sx(x) { return 40 + x / 6 * 500; }
  function sy(y) { return 340 - (y - lo) / (hi - lo) * 320; }
  el(fit, 'rect', {x: 40, y: 20, width: 500, height: 320, fill: 'none', stroke: '#555'});
  function points(xs, ys) { return xs.map(function (x, i) { return sx(x) + ',' + sy(ys[i]); }).join(' '); }
  el(fit, 'polyline', {points: points(d.x_test, d.truth), fill: 'none', stroke: '#1f77b4', 'stroke-width': 2});
  d.x_train.forEach(function (x, i) { el(fit, 'circle', {cx: sx(x), cy: sy(d.y_train[i]), r: 3, fill: '#2ca02c', 'fill-opacity': 0.5}); });
  var line = el(fit, 'polyline', {fill: 'none', stroke: '#d62728', 'stroke-width': 2, 'stroke-dasharray': '6 4'});
  var cell = 380 / Math.max(d.x_test.length, d.x_train.length), cells = [];
  d.x_test.forEach(function (_, r) {
    cells.push(d.x_train.map(function (_, c) {
      var rect = el(heat, 'rect', {x: 10 + c * cell, y: 10 + r * cell, width: cell + 0.5, height: cell + 0.5});
      el(rect, 'title', {});
      return rect;
    }));
  });
  function draw() {
    var w = Number(slider.value), predictions = [], error = 0;
    d.x_test.forEach(function (x, r) {
      var scores = d.x_train.map(function (xi) { var u = (x - xi) * w; return -u * u / 2; });
      var top = Math.max.apply(null, scores);
      var weights = scores.map(function (s) { return Math.exp(s - top); });
      var total = weights.reduce(function (a, b) { return a + b; }, 0);
      var y = 0;
      weights.forEach(function (e, c) {
        var a = e / total, shade = Math.round(255 * (1 - a));
        y += a * d.y_train[c];
        var rect = cells[r][c];
        rect.setAttribute('fill', 'rgb(255,' + shade + ',' + shade + ')');
        rect.setAttribute('data-w', a.toPrecision(3));
        rect.firstChild.textContent = 'x = ' + x.toFixed(2) + ' \u2192 x_i = ' + d.x_train[c].toFixed(2) + ': ' + a.toPrecision(3);
      });
      predictions.push(y);
      error += (y - d.truth[r]) * (y - d.truth[r]);
    });
    line.setAttribute('points', points(d.x_test, predictions));
    document.getElementById('nw-w-value').textContent = w.toFixed(2);
    document.getElementById('nw-mse').textContent = (error / d.x_test.length).toFixed(4);
    heat.dataset.w = w.toFixed(2);
  }
  document.getElementById('nw-w-learned').textContent = d.w_learned.toFixed(3);
  slider.value = String(Math.min(20, Math.max(0.05, d.w_learned)));
  slider.addEventListener('input', draw);
  draw();
})();
)";

// report.html: the settings, the test errors, every picture and the width slider.
cli::RunReport run_report(const Flags& flags, const ExperimentResult& result,
                          const std::vector<std::pair<std::string, std::string>>& pictures,
                          const std::string& graph_svg) {
  cli::RunReport report("nw_regression: attention pooling as Nadaraya–Watson regression");
  report.setting("seed", std::to_string(flags.seed))
      .setting("epochs", std::to_string(flags.epochs))
      .setting("lr", fmt::format("{:g}", flags.lr))
      .setting("kernel", flags.kernel)
      .setting("bandwidth σ", fmt::format("{:g}", flags.bandwidth))
      .setting("w", flags.w);
  report.figure("test MSE, average pooling", fmt::format("{:.4f}", result.mse_average))
      .figure("test MSE, attention pooling (Gaussian, σ = 1)",
              fmt::format("{:.4f}", result.mse_attention));
  for (std::size_t i = 0; i < kAllKernels.size(); ++i) {
    report.figure(fmt::format("test MSE, Nadaraya–Watson, {}", to_string(kAllKernels[i])),
                  fmt::format("{:.4f}", result.mse_kernels[i]));
  }
  report.figure("test MSE, learned attention", fmt::format("{:.4f}", result.mse_learned))
      .figure("final training loss", fmt::format("{:.6f}", result.training.losses.back()))
      .figure("learned w", describe_w(result.w));
  for (const auto& [name, svg] : pictures) report.picture(name, svg);
  const nlohmann::json data = {{"x_train", to_doubles(result.data.x_train)},
                               {"y_train", to_doubles(result.data.y_train)},
                               {"x_test", to_doubles(result.data.x_test)},
                               {"truth", to_doubles(result.data.y_truth)},
                               {"w_learned", mean_of(result.w)}};
  std::string script = kWidthSliderScript;
  script.replace(script.find("NW_DATA"), 7, data.dump());
  report.section("Gaussian attention pooling: move the width w", kWidthSliderHtml, script);
  report.add_graph_svg(graph_svg);
  return report;
}

// Stops at the first epoch whose loss is NaN or infinite, or over 100 times
// epoch 1's (the loss before the first step), before any picture is written
// (the pictures of an earlier run stay as they were). `first_loss` keeps
// epoch 1's loss of the run in progress.
void check_epoch(const Flags& flags, int64_t epoch, double loss, double& first_loss) {
  if (epoch == 1) first_loss = loss;
  const std::string when = fmt::format("epoch {}", epoch);
  const std::string kept = fmt::format("the pictures in '{}' were left as they were", flags.out);
  cli::check_finite_training("loss", loss, when, flags.lr, kept);
  cli::check_loss_growth(loss, first_loss, when, flags.lr, kept);
}

// ---------------------------------------------------------------- one run

// --json: one line with the settings, every test error and the learned w.
void print_json_summary(const Flags& flags, const ExperimentResult& result,
                        const std::filesystem::path& out) {
  nlohmann::json summary = {
      {"seed", flags.seed},
      {"epochs", flags.epochs},
      {"lr", flags.lr},
      {"kernel", flags.kernel},
      {"bandwidth", flags.bandwidth},
      {"w_shape", flags.w},
      {"mse",
       {{"average", result.mse_average},
        {"attention", result.mse_attention},
        {"kernel", result.mse_kernel},
        {"learned", result.mse_learned}}},
      {"kernel_mse", nlohmann::json::object()},
      {"final_loss", result.training.losses.back()},
      {"w_mean", mean_of(result.w)},
      {"train_ms", result.training.compute_ms},
      {"out", out.string()},
  };
  for (std::size_t i = 0; i < kAllKernels.size(); ++i) {
    summary["kernel_mse"][std::string(to_string(kAllKernels[i]))] = result.mse_kernels[i];
  }
  const std::vector<double> w = to_doubles(result.w);
  summary["w"] = w.size() == 1 ? nlohmann::json(w[0]) : nlohmann::json(w);
  fmt::print("{}\n", summary.dump());
}

// The report: each estimator's test error, the training and the pictures.
void print_report(const Flags& flags, const ExperimentResult& result, std::size_t picture_count,
                  const std::filesystem::path& out) {
  fmt::print("\ntest MSE against the noise-free truth ({} inputs 0 … {:g}):\n",
             result.data.x_test.numel(), to_doubles(result.data.x_test).back());
  fmt::print("  {:<44} {:.4f}\n", "average pooling", result.mse_average);
  fmt::print("  {:<44} {:.4f}\n", "attention pooling (Gaussian, σ = 1)", result.mse_attention);
  for (std::size_t i = 0; i < kAllKernels.size(); ++i) {
    const std::string name =
        fmt::format("Nadaraya–Watson, {}, σ = {:g}{}", to_string(kAllKernels[i]), flags.bandwidth,
                    to_string(kAllKernels[i]) == flags.kernel ? " *" : "");
    fmt::print("  {:<44} {:.4f}\n", name, result.mse_kernels[i]);
  }
  fmt::print("  {:<44} {:.4f}\n",
             fmt::format("learned attention ({} w, {} epochs)", flags.w, flags.epochs),
             result.mse_learned);
  fmt::print("\nfinal training loss {:.6f}; learned {}\n", result.training.losses.back(),
             describe_w(result.w));
  fmt::print("training: {} epochs in {:.3f} ms of compute\n", flags.epochs,
             result.training.compute_ms);
  fmt::print(
      "pictures ({} SVG files) and report.html written to {}/  (* = drawn as the nonparametric "
      "fit)\n",
      picture_count, printable(out.string(), 300));
}

int run_once(const Flags& given) {
  const std::filesystem::path out = given.out;
  cli::PathsApart paths;  // the pictures, the page and --dot's files: no two are one file
  paths.writes_matching("--out", out, "nw_*.svg").writes("--out", out / "report.html");
  cli::add_dot_outputs(paths, given.inspect.dot);
  paths.check();
  cli::prepare_output_folder("--out", out);

  cli::InspectSession inspect(given.inspect);  // the graph of the first epoch's step
  // No callback: the training's clock (compute_ms, "training: … ms") then runs
  // without a stop, and no print lands inside it. The losses are checked and
  // printed once training is over, epoch by epoch, as they came. SIGINT and
  // SIGTERM end the training at the next epoch; the pictures then show the w
  // reached (there is no checkpoint: the run takes milliseconds).
  cli::InterruptGuard interrupts;
  const ExperimentResult result =
      run_experiment(experiment_options(given, static_cast<uint64_t>(given.seed),
                                        weight_shape_from_string(given.w)),
                     {}, [&] { return interrupts.stop_requested(); });
  Flags flags = given;  // the titles and the report name the epochs run
  flags.epochs = static_cast<int>(result.training.losses.size());
  const bool terminal = ::isatty(::fileno(stdout)) != 0;
  double first_loss = 0;
  const std::vector<double>& losses = result.training.losses;
  for (std::size_t k = 0; k < losses.size(); ++k) {
    const auto epoch = static_cast<int64_t>(k + 1);
    check_epoch(flags, epoch, losses[k], first_loss);
    if (flags.json) continue;  // with --json nothing but the summary goes to stdout
    if (terminal) {
      fmt::print("\repoch {:>4}/{}  loss {:.6f}", epoch, flags.epochs, losses[k]);
      if (epoch == flags.epochs) fmt::print("\n");
    } else {
      fmt::print("epoch {}, loss {:.6f}\n", epoch, losses[k]);
    }
  }
  std::fflush(stdout);
  inspect.finish(flags.json ? std::cerr : std::cout);

  // Every picture is drawn before the first one is written, and they are
  // renamed into place together: a failure leaves the old set.
  const auto pictures = draw_pictures(flags, result);
  cli::OutputSet set(out);
  for (const auto& [name, svg] : pictures) {
    write_file_atomically(set.staged(name), svg);
    interrupts.during_save();
  }
  run_report(flags, result, pictures, inspect.graph_svg()).save(set.staged("report.html"));
  set.commit();

  if (flags.json) {
    print_json_summary(flags, result, out);
  } else {
    print_report(flags, result, pictures.size(), out);
  }
  if (!interrupts.requested()) return 0;
  (flags.json ? std::cerr : std::cout)
      << fmt::format(
             "Interrupted at epoch {} of {} by {}; wrote the pictures of the w reached to {}/ "
             "(nw_regression keeps no checkpoint: run it again to train all {} epochs)\n",
             flags.epochs, given.epochs, interrupts.what(), printable(out.string(), 300),
             given.epochs)
      << std::flush;
  return interrupts.exit_status();
}

// ---------------------------------------------------------------- many seeds

struct Statistic {
  std::vector<double> values;
  double mean() const {
    double total = 0;
    for (double value : values) total += value;
    return total / static_cast<double>(values.size());
  }
  // The sample standard deviation (0 for a single value).
  double stddev() const {
    if (values.size() < 2) return 0;
    const double average = mean();
    double total = 0;
    for (double value : values) total += (value - average) * (value - average);
    return std::sqrt(total / static_cast<double>(values.size() - 1));
  }
  double median() const {
    std::vector<double> sorted = values;
    std::sort(sorted.begin(), sorted.end());
    const std::size_t middle = sorted.size() / 2;
    return sorted.size() % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
  }
};

// Seeds seed … seed + N − 1, both shapes of w: a Markdown table of the mean
// test errors (no pictures).
int run_seeds(const Flags& flags) {
  std::vector<std::pair<std::string, Statistic>> rows = {
      {"average pooling", {}},
      {"attention pooling (Gaussian, σ = 1)", {}},
  };
  for (Kernel kernel : kAllKernels) {
    rows.push_back(
        {fmt::format("Nadaraya–Watson, {}, σ = {:g}", to_string(kernel), flags.bandwidth), {}});
  }
  rows.push_back({fmt::format("learned attention, scalar w, {} epochs", flags.epochs), {}});
  rows.push_back({fmt::format("learned attention, vector w, {} epochs", flags.epochs), {}});
  Statistic scalar_loss, vector_loss, scalar_ms, vector_ms, scalar_w;
  int loss_fell = 0;

  // SIGINT and SIGTERM end the loop after the seed in progress; the table then
  // covers the seeds done.
  cli::InterruptGuard interrupts;
  int seeds_done = 0;
  for (int i = 0; i < flags.seeds; ++i) {
    if (interrupts.stop_requested() && i > 0) break;
    ++seeds_done;
    const uint64_t seed = static_cast<uint64_t>(flags.seed) + static_cast<uint64_t>(i);
    // Checked after training, so nothing stops the training's clock.
    const ExperimentResult scalar =
        run_experiment(experiment_options(flags, seed, WeightShape::scalar));
    const ExperimentResult vector =
        run_experiment(experiment_options(flags, seed, WeightShape::vector));
    for (const ExperimentResult* run : {&scalar, &vector}) {
      double first_loss = 0;
      for (std::size_t k = 0; k < run->training.losses.size(); ++k)
        check_epoch(flags, static_cast<int64_t>(k + 1), run->training.losses[k], first_loss);
    }
    rows[0].second.values.push_back(scalar.mse_average);
    rows[1].second.values.push_back(scalar.mse_attention);
    for (std::size_t k = 0; k < kAllKernels.size(); ++k) {
      rows[2 + k].second.values.push_back(scalar.mse_kernels[k]);
    }
    rows[5].second.values.push_back(scalar.mse_learned);
    rows[6].second.values.push_back(vector.mse_learned);
    scalar_loss.values.push_back(scalar.training.losses.back());
    vector_loss.values.push_back(vector.training.losses.back());
    scalar_ms.values.push_back(scalar.training.compute_ms);
    vector_ms.values.push_back(vector.training.compute_ms);
    scalar_w.values.push_back(mean_of(scalar.w));
    for (const ExperimentResult* run : {&scalar, &vector}) {
      if (run->training.losses.back() < run->training.losses.front()) ++loss_fell;
    }
  }

  const auto stopped = [&] {
    if (!interrupts.requested()) return 0;
    (flags.json ? std::cerr : std::cout)
        << fmt::format("Interrupted after seed {} of {} by {}; the table covers seeds {}…{}\n",
                       seeds_done, flags.seeds, interrupts.what(), flags.seed,
                       flags.seed + (seeds_done - 1))
        << std::flush;
    return interrupts.exit_status();
  };
  if (flags.json) {
    nlohmann::json summary = {{"seeds", seeds_done},
                              {"first_seed", flags.seed},
                              {"epochs", flags.epochs},
                              {"lr", flags.lr},
                              {"bandwidth", flags.bandwidth}};
    for (const auto& [name, statistic] : rows) {
      summary["mse"][name] = {{"mean", statistic.mean()}, {"std", statistic.stddev()}};
    }
    summary["final_loss"] = {{"scalar", scalar_loss.mean()}, {"vector", vector_loss.mean()}};
    summary["train_ms_median"] = {{"scalar", scalar_ms.median()}, {"vector", vector_ms.median()}};
    summary["w_scalar_mean"] = scalar_w.mean();
    fmt::print("{}\n", summary.dump());
    std::fflush(stdout);
    return stopped();
  }

  fmt::print("Test MSE against the noise-free truth, seeds {}…{} (mean ± standard deviation):\n\n",
             flags.seed, flags.seed + (seeds_done - 1));
  fmt::print("| estimator | test MSE |\n|---|---|\n");
  for (const auto& [name, statistic] : rows) {
    fmt::print("| {} | {:.3f} ± {:.3f} |\n", name, statistic.mean(), statistic.stddev());
  }
  fmt::print("\nlearned scalar w: mean {:.3f} ± {:.3f}\n", scalar_w.mean(), scalar_w.stddev());
  fmt::print("final training loss: scalar {:.3f}, vector {:.3f} (mean); fell in {} of {} runs\n",
             scalar_loss.mean(), vector_loss.mean(), loss_fell, 2 * seeds_done);
  fmt::print("training compute, median of {} runs: scalar {:.3f} ms, vector {:.3f} ms\n",
             seeds_done, scalar_ms.median(), vector_ms.median());
  std::fflush(stdout);
  return stopped();
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  cli::Parser parser("nw_regression",
                     "Attention pooling as Nadaraya-Watson kernel regression: fits\n"
                     "y = 2 sin(x) + x^0.8 + noise with average pooling, Gaussian attention\n"
                     "pooling, a chosen kernel, and attention with a learned width w, then\n"
                     "draws the fits, the loss, the attention weights and the kernels as SVG.");
  parser
      .flag("seed", flags.seed, "random seed for the data and w's initial value",
            cli::non_negative())
      .flag("epochs", flags.epochs, "training epochs of the learned attention",
            cli::size_at_most(kMaxEpochs))
      .flag("lr", flags.lr, cli::learning_rate_help("SGD learning rate"), cli::positive())
      .choice("kernel", flags.kernel, {"gaussian", "boxcar", "epanechnikov"},
              "kernel of the nonparametric Nadaraya-Watson fit")
      .flag("bandwidth", flags.bandwidth, "kernel bandwidth sigma", cli::positive())
      .choice("w", flags.w, {"scalar", "vector"},
              "learned w: one width, or one per key (n - 1, as the seed)")
      .flag("out", flags.out, "folder for the SVG pictures (created if missing)")
      .flag("json", flags.json, "print one JSON summary line instead of the report")
      .flag("seeds", flags.seeds,
            "average the test errors over this many seeds from --seed (a table, no pictures)",
            cli::size_at_most(kMaxSeeds));
  cli::declare_inspect_flags(parser, flags.inspect);
  return cli::run_main(parser, argc, argv, [&] {
    check_seed_range(flags);
    return flags.seeds > 1 ? run_seeds(flags) : run_once(flags);
  });
}
