// tests/examples/test_translate_cli.cpp — the translate program as a user runs
// it: train (progress, --json, checkpoint, pictures, --resume, Ctrl-C),
// translate (stdin to stdout, unknown words, --attention maps), eval (BLEU),
// and the bad inputs that must end in one line "error: …" and exit status 2
// with nothing half-written.
//
// It runs the built binary ATTOGRAD_BINARY_DIR/examples/translate, so the
// target must be built before the tests run (CI builds everything). The
// program is the float build; the double test binary would only repeat the
// same runs, so these cases return at once there.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "nn/safetensors.hpp"
#include "tests/support/translate_program.hpp"

namespace test_translate_cli {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;

namespace {

using namespace attograd::testing::translate_program;

// A small data file: the first `count` short lines of the shipped file whose
// English starts with `prefix` (so they pass the tutorial's filter), and a
// run takes a second. Extra lines can be appended to test the reader.
fs::path small_data(const fs::path& folder, size_t count, const std::string& extra = "",
                    const std::string& prefix = "I'm ", const std::string& name = "pairs.tsv") {
  std::ifstream in(kShippedData);
  std::string text;
  size_t kept = 0;
  for (std::string line; kept < count && std::getline(in, line);) {
    const size_t tab = line.find('\t');
    if (line.rfind(prefix, 0) != 0 || tab == std::string::npos || tab > 30) continue;
    const size_t end = line.find('\t', tab + 1);
    if ((end == std::string::npos ? line.size() : end) - tab > 40) continue;
    text += line + "\n";
    ++kept;
  }
  const fs::path path = folder / name;
  write_file(path, text + extra);
  return path;
}

// The flags of a quick run: a small model on a small file.
std::vector<std::string> quick_train(const fs::path& data, const fs::path& out, int iterations) {
  return {"train",
          "--data",
          data.string(),
          "--out",
          out.string(),
          "--iters",
          std::to_string(iterations),
          "--hidden",
          "16",
          "--print-every",
          "10",
          "--plot-every",
          "5",
          "--checkpoint-every",
          "20",
          "--examples",
          "2",
          "--validation",
          "0.1",
          "--lr",
          "0.1"};
}

std::vector<std::string> with(std::vector<std::string> arguments,
                              const std::vector<std::string>& more) {
  arguments.insert(arguments.end(), more.begin(), more.end());
  return arguments;
}

}  // namespace

TEST_CASE("translate: --help describes every command and flag", "[translate][cli]") {
  if constexpr (!kFloatBuild) return;
  TemporaryFolder scratch;
  const Run help = run({"train", "--help"}, scratch.path);
  CHECK(help.status == 0);
  for (const char* flag : {"--data", "--reverse", "--hidden", "--decoder", "--lr", "--iters",
                           "--seed", "--teacher-forcing", "--resume", "--json", "--out"}) {
    CHECK_THAT(help.out, Contains(flag));
  }
  CHECK_THAT(run({"--help"}, scratch.path).out, Contains("translate"));
  CHECK_THAT(run({"eval", "--help"}, scratch.path).out, Contains("--checkpoint"));
}

TEST_CASE("translate: train, then translate stdin and evaluate", "[translate][cli]") {
  if constexpr (!kFloatBuild) return;
  TemporaryFolder scratch;
  const fs::path data = small_data(scratch.path, 60);
  const fs::path out = scratch.path / "run";

  const Run trained = run(with(quick_train(data, out, 60), {"--json"}), scratch.path);
  INFO("stderr: " << trained.err);
  REQUIRE(trained.status == 0);
  // --json: one line on stdout, the report on stderr.
  const std::vector<std::string> lines = lines_of(trained.out);
  REQUIRE(lines.size() == 1);
  const nlohmann::json summary = nlohmann::json::parse(lines[0]);
  CHECK(summary["pairs"].get<int>() == 60);
  CHECK(summary["iterations"].get<int>() == 60);
  CHECK(summary["source_vocabulary"].get<int>() > 3);
  CHECK(summary["target_vocabulary"].get<int>() > 3);
  CHECK(summary["ms_per_iteration"].get<double>() > 0);
  CHECK(std::isfinite(summary["final_loss"].get<double>()));
  CHECK(summary["validation_bleu"].get<double>() >= 0);
  CHECK(summary["validation_bleu"].get<double>() <= 1);
  CHECK_THAT(trained.err, Contains("Trimmed to 60 sentence pairs"));
  CHECK_THAT(trained.err, Contains("iter     10/60"));
  CHECK_THAT(trained.err, Contains("ETA"));
  CHECK_THAT(trained.err, Contains("\n> "));
  CHECK_THAT(trained.err, Contains("\n< "));

  // The pictures: the loss curve (one point per 5 iterations) and attention maps.
  const Picture loss = parse_picture(out / "loss.svg");
  CHECK(loss.well_formed);
  CHECK(loss.polyline_points == 12);
  const Picture attention = parse_picture(out / "attention_1.svg");
  CHECK(attention.well_formed);
  CHECK(attention.heatmap_cells >= 10);  // at least one output row over L = 10 input columns
  CHECK(attention.has_text("<EOS>"));
  REQUIRE(fs::exists(out / "checkpoint.safetensors"));
  for (const auto& entry : fs::directory_iterator(out)) {
    CHECK(entry.path().filename().string().find(".attograd-tmp.") == std::string::npos);
  }

  // translate: one output line per input line; unknown words and bad bytes are reported.
  const fs::path maps = scratch.path / "maps";
  const Run translated =
      run({"translate", "--checkpoint", (out / "checkpoint.safetensors").string(), "--attention",
           maps.string()},
          scratch.path, "Je suis fatigué.\nzorglub !\n\xff\xfe\n");
  INFO("stderr: " << translated.err);
  CHECK(translated.status == 0);
  CHECK(lines_of(translated.out).size() == 3);
  CHECK_THAT(translated.err, Contains("stdin:2: 1 unknown word mapped to <unk>: 'zorglub'"));
  CHECK_THAT(translated.err, Contains("stdin:3: invalid UTF-8"));
  CHECK(parse_picture(maps / "attention_1.svg").well_formed);
  CHECK(parse_picture(maps / "attention_2.svg").has_text("<unk>") == false);
  CHECK(parse_picture(maps / "attention_2.svg").has_text("zorglub"));
  CHECK_FALSE(fs::exists(maps / "attention_3.svg"));

  // eval: BLEU on the held-out split, then on another file, with examples.
  const Run evaluated =
      run({"eval", "--checkpoint", (out / "checkpoint.safetensors").string(), "--examples", "3"},
          scratch.path);
  INFO("stderr: " << evaluated.err);
  CHECK(evaluated.status == 0);
  CHECK_THAT(evaluated.out, Contains("BLEU-4"));
  CHECK_THAT(evaluated.out, Contains("the validation split"));
  CHECK_THAT(evaluated.out, Contains("\n> "));
  CHECK_THAT(evaluated.out, Contains("\n= "));
  CHECK_THAT(evaluated.out, Contains("\n< "));
  const Run on_file = run({"eval", "--checkpoint", (out / "checkpoint.safetensors").string(),
                           "--data", data.string(), "--json"},
                          scratch.path);
  REQUIRE(on_file.status == 0);
  const nlohmann::json scores = nlohmann::json::parse(lines_of(on_file.out).back());
  CHECK(scores["pairs"].get<int>() == 60);
  CHECK(scores["bleu"].get<double>() >= 0);
}

TEST_CASE("translate: --resume continues exactly where the run stopped", "[translate][cli]") {
  if constexpr (!kFloatBuild) return;
  TemporaryFolder scratch;
  const fs::path data = small_data(scratch.path, 40);
  const Run straight =
      run(with(quick_train(data, scratch.path / "straight", 40), {"--json"}), scratch.path);
  REQUIRE(straight.status == 0);
  const fs::path split = scratch.path / "split";
  REQUIRE(run(quick_train(data, split, 20), scratch.path).status == 0);
  const Run resumed = run(with(quick_train(data, split, 40),
                               {"--resume", (split / "checkpoint.safetensors").string(), "--json"}),
                          scratch.path);
  INFO("stderr: " << resumed.err);
  REQUIRE(resumed.status == 0);
  CHECK_THAT(resumed.err, Contains("at iteration 20"));
  const nlohmann::json a = nlohmann::json::parse(lines_of(straight.out).back());
  const nlohmann::json b = nlohmann::json::parse(lines_of(resumed.out).back());
  CHECK(a["final_loss"] == b["final_loss"]);
  CHECK(a["validation_bleu"] == b["validation_bleu"]);
  const auto first =
      attograd::nn::read_safetensors(scratch.path / "straight" / "checkpoint.safetensors");
  const auto second = attograd::nn::read_safetensors(split / "checkpoint.safetensors");
  REQUIRE(first.tensors.size() == second.tensors.size());
  for (size_t i = 0; i < first.tensors.size(); ++i) {
    INFO(first.tensors[i].first);
    CHECK(first.tensors[i].first == second.tensors[i].first);
    CHECK(first.tensors[i].second.to_vector() == second.tensors[i].second.to_vector());
  }
}

TEST_CASE("translate: Ctrl-C saves a checkpoint and exits cleanly", "[translate][cli]") {
  if constexpr (!kFloatBuild) return;
  TemporaryFolder scratch;
  REQUIRE(fs::exists(kBinary));
  const fs::path data = small_data(scratch.path, 40);
  const fs::path out = scratch.path / "run";
  const fs::path log = scratch.path / "log.txt";
  std::vector<std::string> arguments = attograd::testing::program_command(kBinary);
  const std::vector<std::string> flags = quick_train(data, out, 1000000);
  arguments.insert(arguments.end(), flags.begin(), flags.end());
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    std::vector<char*> argv;
    for (std::string& argument : arguments) argv.push_back(argument.data());
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    ::_exit(127);
  }
  // Wait until it is training (a progress line), then interrupt it.
  bool training = false;
  for (int tries = 0; tries < 600 && !training; ++tries) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    training = read_file(log).find("iter ") != std::string::npos;
  }
  ::kill(child, SIGINT);
  int raw = 0;
  ::waitpid(child, &raw, 0);
  INFO("output: " << read_file(log));
  REQUIRE(training);
  CHECK(WIFEXITED(raw));
  CHECK(WEXITSTATUS(raw) == 130);
  CHECK_THAT(read_file(log), Contains("Interrupted at iteration"));
  const fs::path checkpoint = out / "checkpoint.safetensors";
  REQUIRE(fs::exists(checkpoint));
  // The checkpoint is whole, and training continues from it.
  const std::string text = read_file(log);
  const size_t at = text.find("Interrupted at iteration ");
  REQUIRE(at != std::string::npos);
  const long stopped = std::stol(text.substr(at + 25));
  const Run resumed =
      run(with(quick_train(data, scratch.path / "more", 1000000),
               {"--resume", checkpoint.string(), "--iters", std::to_string(stopped + 5)}),
          scratch.path);
  INFO("stderr: " << resumed.err);
  CHECK(resumed.status == 0);
  CHECK_THAT(resumed.out, Contains("at iteration " + std::to_string(stopped)));
  // Asking for fewer iterations than the checkpoint has done is refused.
  const Run backwards = run(with(quick_train(data, scratch.path / "less", 1000000),
                                 {"--resume", checkpoint.string(), "--iters", "1"}),
                            scratch.path);
  require_one_line_error(backwards);
  CHECK_THAT(backwards.err, Contains("pass a larger --iters"));
}

TEST_CASE("translate: bad input ends in one error line and exit status 2", "[translate][cli]") {
  if constexpr (!kFloatBuild) return;
  TemporaryFolder scratch;
  const fs::path out = scratch.path / "out";

  SECTION("a missing data file") {
    const Run result = run(quick_train(scratch.path / "nope.tsv", out, 10), scratch.path);
    require_one_line_error(result);
    CHECK_THAT(result.err, Contains("nope.tsv"));
    CHECK_FALSE(fs::exists(out));
  }
  SECTION("lines without a tab or with invalid UTF-8 are skipped, counted and named") {
    const fs::path data =
        small_data(scratch.path, 30, "no tab on this line\nI'm \xff.\tJe \xfe.\n");
    const Run result = run(quick_train(data, out, 10), scratch.path);
    INFO("stderr: " << result.err);
    CHECK(result.status == 0);
    CHECK_THAT(result.err, Contains("pairs.tsv:31"));
    CHECK_THAT(result.err, Contains("pairs.tsv:32"));
    CHECK_THAT(result.out, Contains("2 skipped"));
  }
  SECTION("nothing left after the filter") {
    const fs::path data = scratch.path / "unfiltered.tsv";
    write_file(data,
               "Hello.\tBonjour.\nGo away, now, please, right now, and never come back.\tVa.\n");
    const Run result = run(quick_train(data, out, 10), scratch.path);
    require_one_line_error(result);
    CHECK_THAT(result.err, Contains("no sentence pairs left"));
    CHECK_FALSE(fs::exists(out));
  }
  SECTION("a checkpoint whose vocabulary does not match the data") {
    const fs::path data = small_data(scratch.path, 30);
    REQUIRE(run(quick_train(data, scratch.path / "first", 10), scratch.path).status == 0);
    const fs::path other = small_data(scratch.path, 30, "", "He's ", "other.tsv");
    const Run result =
        run(with(quick_train(other, out, 20),
                 {"--resume", (scratch.path / "first" / "checkpoint.safetensors").string()}),
            scratch.path);
    require_one_line_error(result);
    CHECK_THAT(result.err, Contains("vocabulary"));
    CHECK_FALSE(fs::exists(out));
  }
  SECTION("a damaged or missing checkpoint") {
    const fs::path broken = scratch.path / "broken.safetensors";
    write_file(broken, "not a safetensors file");
    const Run damaged =
        run({"translate", "--checkpoint", broken.string()}, scratch.path, "bonjour\n");
    require_one_line_error(damaged);
    CHECK_THAT(damaged.err, Contains("broken.safetensors"));
    const Run missing =
        run({"eval", "--checkpoint", (scratch.path / "none.safetensors").string()}, scratch.path);
    require_one_line_error(missing);
    CHECK_THAT(missing.err, Contains("none.safetensors"));
  }
  SECTION("unknown flags and bad values") {
    require_one_line_error(run({"train", "--bogus"}, scratch.path));
    require_one_line_error(run({"train", "--decoder", "luong"}, scratch.path));
    require_one_line_error(run({"train", "--iters", "0"}, scratch.path));
    require_one_line_error(run({"fly"}, scratch.path));
    CHECK_FALSE(fs::exists(out));
  }
}

}  // namespace test_translate_cli
