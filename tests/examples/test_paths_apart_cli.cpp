// tests/examples/test_paths_apart_cli.cpp — no output of a program replaces
// one of its inputs, and no two of its outputs are one file
// (examples/common/paths_apart.hpp): the rule itself on links, hard links and
// spellings, then every program's path flags walked in pairs, each clash
// ending with exit status 2, one line naming both flags, and the input's
// bytes unchanged.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "examples/common/cli.hpp"
#include "examples/common/paths_apart.hpp"
#include "tests/support/program.hpp"
#include "tests/support/translate_program.hpp"

namespace test_paths_apart_cli {

namespace fs = std::filesystem;
using attograd::cli::PathsApart;
using attograd::cli::UsageError;
using namespace attograd::testing::translate_program;
using Catch::Matchers::Contains;

namespace {

// The message check() throws, or "" when the paths are apart.
std::string clash(const PathsApart& paths) {
  try {
    paths.check();
  } catch (const UsageError& error) {
    return error.what();
  }
  return "";
}

// The ways one file can be spelt again: the path itself, through "sub/..",
// a symbolic link, a hard link. Each returns a new path reaching `file`.
std::vector<std::function<fs::path(const fs::path&)>> spellings() {
  return {
      [](const fs::path& file) { return file; },
      [](const fs::path& file) {
        fs::create_directories(file.parent_path() / "sub");
        return file.parent_path() / "sub" / ".." / file.filename();
      },
      [](const fs::path& file) {
        const fs::path link = file.parent_path() / ("link-to-" + file.filename().string());
        fs::create_symlink(file.filename(), link);
        return link;
      },
      [](const fs::path& file) {
        const fs::path link = file.parent_path() / ("hard-" + file.filename().string());
        fs::create_hard_link(file, link);
        return link;
      },
  };
}

}  // namespace

TEST_CASE("paths apart: an output is never an input, however it is spelt", "[cli]") {
  const TemporaryFolder scratch;
  const fs::path data = scratch.path / "pairs.tsv";
  write_file(data, "a\tb\n");
  int spelling = 0;
  for (const auto& spell : spellings()) {
    INFO("spelling " << spelling++);
    PathsApart paths;
    paths.reads("--data", data).writes("--dot", spell(data));
    CHECK_THAT(clash(paths), Contains("--dot '") && Contains("is an input (--data"));
  }
  PathsApart apart;
  apart.reads("--data", data).writes("--dot", scratch.path / "graph.dot").writes("--report", "");
  CHECK(clash(apart).empty());
}

TEST_CASE("paths apart: two outputs that do not exist yet clash by their resolved path", "[cli]") {
  const TemporaryFolder scratch;
  const fs::path here = fs::current_path();
  fs::current_path(scratch.path);
  PathsApart paths;
  paths.writes("--out", fs::path(".") / "report.html").writes("--dot", "report.html");
  const std::string message = clash(paths);
  fs::current_path(here);
  CHECK_THAT(message, Contains("--out './report.html' and --dot 'report.html' are one file"));
  CHECK(!fs::exists(scratch.path / "report.html"));
}

TEST_CASE("paths apart: a run may replace the checkpoint it continues, and nothing else may",
          "[cli]") {
  const TemporaryFolder scratch;
  const fs::path checkpoint = scratch.path / "checkpoint.safetensors";
  write_file(checkpoint, "weights");
  PathsApart next;
  next.reads("--resume", checkpoint).writes_next("--out", checkpoint, "--resume");
  CHECK(clash(next).empty());
  PathsApart other;
  other.reads("--resume", checkpoint).writes("--dot", checkpoint);
  CHECK_THAT(clash(other), Contains("--dot") && Contains("(--resume"));
  PathsApart data_as_next;  // writes_next spares only the input it continues
  data_as_next.reads("--data", checkpoint).writes_next("--out", checkpoint, "--resume");
  CHECK_THAT(clash(data_as_next), Contains("is an input (--data"));
}

TEST_CASE("paths apart: files named as the program runs are matched by folder and pattern",
          "[cli]") {
  const TemporaryFolder scratch;
  const fs::path maps = scratch.path / "maps";
  fs::create_directories(maps);
  const fs::path data = scratch.path / "pairs.tsv";
  write_file(data, "a\tb\n");
  fs::create_hard_link(data, maps / "attention_3.svg");  // the same file under a drawn name
  PathsApart hard;
  hard.reads("--data", data).writes_matching("--attention", maps, "attention_*.svg");
  CHECK_THAT(clash(hard), Contains("--attention '") && Contains("an input (--data)"));

  PathsApart named;  // a later output under one of the drawn names
  named.writes_matching("--attention", maps, "attention_*.svg")
      .writes("--report", scratch.path / "maps" / ".." / "maps" / "attention_7.svg");
  CHECK_THAT(clash(named), Contains("is one of the attention_*.svg files --attention"));

  PathsApart other_names;
  other_names.writes_matching("--attention", maps, "attention_*.svg")
      .writes("--report", maps / "report.html");
  CHECK(clash(other_names).empty());
}

TEST_CASE("paths apart: a hostile path is quoted short and shown, not obeyed", "[cli]") {
  const TemporaryFolder scratch;
  const std::string name = "\x1b[2J" + std::string(5000, 'x');
  PathsApart paths;
  paths.writes("--out", scratch.path / name).writes("--dot", scratch.path / name);
  const std::string message = clash(paths);
  CHECK(message.size() < 600);
  CHECK(message.find('\x1b') == std::string::npos);
  CHECK(message.find('\n') == std::string::npos);
}

namespace {

// One path flag of a program. An input names a file; an output writes files
// at `targets(value)`: for a file flag the value itself, for a folder flag
// the files it writes inside the folder.
struct PathFlag {
  std::string flag;
  bool folder = false;
  std::vector<std::string> names;  // a folder flag's files (one drawn name for a pattern)
};

// A program command and its path flags.
struct Command {
  std::string label;
  fs::path binary;
  std::vector<std::string> arguments;  // everything but the path flags under test
  std::vector<PathFlag> inputs;
  std::vector<PathFlag> outputs;
};

const fs::path kExamples = fs::path(ATTOGRAD_BINARY_DIR) / "examples";

// A checkpoint of `recipe` to resume, trained for a step in `folder`.
fs::path trained_checkpoint(const std::string& recipe, const fs::path& folder) {
  const fs::path out = folder / ("trained-" + recipe);
  std::vector<std::string> arguments;
  if (recipe == "tutorial") {
    arguments = {"train",      "--data",     tutorial_data(folder, 20).string(),
                 "--out",      out.string(), "--iters",
                 "2",          "--hidden",   "8",
                 "--examples", "1"};
  } else {
    arguments = recipe == "batched" ? quick_batched_train(out, 1) : quick_transformer_train(out, 1);
  }
  const Run trained = run(arguments, folder);
  INFO("training a checkpoint to resume: " << trained.err);
  REQUIRE(trained.status == 0);
  return out / "checkpoint.safetensors";
}

}  // namespace

TEST_CASE("paths apart: every program's outputs, walked in pairs with its inputs and each other",
          "[cli]") {
  if (!kFloatBuild) return;
  const TemporaryFolder scratch;
  const PathFlag data{"--data", false, {}};
  const PathFlag resume{"--resume", false, {}};
  const PathFlag checkpoint{"--checkpoint", false, {}};
  const PathFlag dot{"--dot", false, {}};
  const PathFlag report{"--report", false, {}};
  const PathFlag attention{"--attention", true, {"attention_1.svg"}};
  const std::vector<std::string> train_files = {"checkpoint.safetensors", "loss.svg",
                                                "report.html"};
  auto with = [](std::vector<std::string> names, const std::string& name) {
    names.push_back(name);
    return names;
  };
  const fs::path translate = kExamples / "translate";
  const std::vector<Command> commands = {
      {"translate train (tutorial)",
       translate,
       {"train", "--iters", "5"},
       {data, resume},
       {{"--out", true, with(train_files, "attention_1.svg")}, dot}},
      {"translate train --recipe batched",
       translate,
       {"train", "--recipe", "batched"},
       {data, resume},
       {{"--out", true, with(train_files, "attention.svg")}}},
      {"translate train --recipe transformer",
       translate,
       {"train", "--recipe", "transformer"},
       {data, resume},
       {{"--out", true, with(train_files, "attention/encoder_head1.svg")}}},
      {"translate translate (tutorial)",
       translate,
       {"translate"},
       {checkpoint},
       {attention, report}},
      {"translate translate --recipe batched",
       translate,
       {"translate", "--recipe", "batched"},
       {checkpoint},
       {attention, report}},
      {"translate translate --recipe transformer",
       translate,
       {"translate", "--recipe", "transformer"},
       {checkpoint},
       {attention, report}},
      {"nw_regression",
       kExamples / "nw_regression",
       {},
       {},
       {{"--out", true, {"nw_loss.svg", "report.html"}}, dot}},
      {"higher_order",
       kExamples / "higher_order",
       {},
       {},
       {{"--out", true, {"newton_vs_sgd.svg"}}, dot}},
      {"gpt train",
       kExamples / "gpt",
       {"train", "--iters", "2", "--layers", "1", "--heads", "1", "--embd", "8", "--block", "8",
        "--batch", "2"},
       {data, resume},
       {{"--out", true, train_files}, dot}},
  };
  const fs::path pairs = tutorial_data(scratch.path, 20);
  const std::string pairs_text = read_file(pairs);
  const std::map<std::string, fs::path> checkpoints = {
      {"tutorial", trained_checkpoint("tutorial", scratch.path)},
      {"batched", trained_checkpoint("batched", scratch.path)},
      {"transformer", trained_checkpoint("transformer", scratch.path)}};
  auto recipe_of = [](const Command& command) -> std::string {
    if (command.label.find("batched") != std::string::npos) return "batched";
    if (command.label.find("transformer") != std::string::npos) return "transformer";
    return "tutorial";
  };
  const auto spell = spellings();
  size_t case_number = 0;
  auto refused = [&](const Command& command, const std::vector<std::string>& path_arguments,
                     const std::string& first_flag, const std::string& second_flag) {
    std::vector<std::string> arguments = command.arguments;
    arguments.insert(arguments.end(), path_arguments.begin(), path_arguments.end());
    const Run result = attograd::testing::run_program(command.binary, arguments, scratch.path);
    std::string words;
    for (const std::string& word : arguments) words += " " + word;
    INFO(command.label << ":" << words);
    require_one_line_error(result);
    CHECK_THAT(result.err, Contains(first_flag) && Contains(second_flag));
  };

  for (const Command& command : commands) {
    for (const PathFlag& output : command.outputs) {
      const std::vector<std::string> names =
          output.folder ? output.names : std::vector<std::string>{"file"};
      for (const std::string& name : names) {
        // Each input at the path the output writes, spelt another way each time.
        for (const PathFlag& input : command.inputs) {
          if (input.flag == "--resume" && name == "checkpoint.safetensors")
            continue;  // continues it
          const fs::path case_folder = scratch.path / ("case" + std::to_string(case_number));
          const auto& spelt = spell[case_number++ % spell.size()];
          const fs::path target = case_folder / name;
          fs::create_directories(target.parent_path());
          if (input.flag == "--data") {
            fs::copy_file(pairs, target);
          } else {
            fs::copy_file(checkpoints.at(recipe_of(command)), target);
          }
          const std::string before = read_file(target);
          const fs::path spelt_path = spelt(target);
          if (output.folder) {  // the input spelt another way, the folder as it is
            refused(command, {input.flag, spelt_path.string(), output.flag, case_folder.string()},
                    output.flag, input.flag);
          } else {  // the output spelt another way
            refused(command, {input.flag, target.string(), output.flag, spelt_path.string()},
                    output.flag, input.flag);
          }
          CHECK(read_file(target) == before);
        }
        // Another output of the command at the same path: only a file flag can
        // be pointed at any name.
        for (const PathFlag& other : command.outputs) {
          if (&other == &output || other.folder) continue;
          const fs::path case_folder = scratch.path / ("case" + std::to_string(case_number++));
          const fs::path target = output.folder ? case_folder / name : case_folder / "shared";
          const fs::path folder_value = output.folder ? case_folder : target;
          std::vector<std::string> arguments = {output.flag, folder_value.string(), other.flag,
                                                target.string()};
          if (!command.inputs.empty()) {
            const fs::path input =
                case_folder.parent_path() / "inputs" / command.inputs[0].flag.substr(2);
            fs::create_directories(input.parent_path());
            if (!fs::exists(input)) {
              if (command.inputs[0].flag == "--data") {
                fs::copy_file(pairs, input);
              } else {
                fs::copy_file(checkpoints.at(recipe_of(command)), input);
              }
            }
            arguments.insert(arguments.end(), {command.inputs[0].flag, input.string()});
          }
          refused(command, arguments, output.flag, other.flag);
          CHECK(!fs::exists(target));
        }
      }
    }
  }
  CHECK(read_file(pairs) == pairs_text);
}

TEST_CASE("paths apart: the data file a resumed checkpoint names is an input too", "[cli]") {
  if (!kFloatBuild) return;
  const TemporaryFolder scratch;
  const fs::path checkpoint = trained_checkpoint("tutorial", scratch.path);
  const fs::path data = scratch.path / "pairs.tsv";  // what the checkpoint names
  const std::string before = read_file(data);
  const Run result = run({"train", "--resume", checkpoint.string(), "--iters", "4", "--out",
                          (scratch.path / "next").string(), "--dot", data.string()},
                         scratch.path);
  require_one_line_error(result);
  CHECK_THAT(result.err, Contains("--dot '") && Contains("the data file of --resume's checkpoint"));
  CHECK(read_file(data) == before);
}

}  // namespace test_paths_apart_cli
