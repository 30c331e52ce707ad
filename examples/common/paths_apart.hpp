// examples/common/paths_apart.hpp — no output of a program replaces one of
// its inputs, and no two outputs are one file.
//
// Before any work, a program lists the files it reads and the files it will
// write, each with the flag it came from, and checks them:
//
//   cli::PathsApart paths;
//   paths.reads("--data", flags.data)
//       .reads("--resume", flags.resume)
//       .writes_next("--out", folder / "checkpoint.safetensors", "--resume")
//       .writes("--out", folder / "loss.svg")
//       .writes("--dot", flags.dot)
//       .writes_matching("--attention", flags.attention, "attention_*.svg");
//   paths.check();   // UsageError: "--dot 'pairs.tsv' is an input (--data): …"
//
// "One file" is file identity, not spelling: two paths name one file when
// they reach the same device and inode after following symbolic links (so a
// link, a hard link, "./x" and "dir/../x" are all caught); a path that does
// not exist yet is compared by its resolved absolute form. An empty path (a
// flag not given) takes no part.
//
// The one input an output may replace is the file it continues:
// `writes_next` names it (a resumed run's next checkpoint replaces the one it
// resumed, as `--resume run/checkpoint.safetensors --out run` means). Every
// write the programs make is atomic (a temporary file renamed), so such a
// replacement happens only after the input has been read.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace attograd::cli {

class PathsApart {
 public:
  // A file the program reads; `flag` names where it came from ("--data",
  // or "the data file of --resume's checkpoint" for a file a checkpoint's
  // metadata names).
  PathsApart& reads(std::string flag, std::filesystem::path file);
  // A file the program writes.
  PathsApart& writes(std::string flag, std::filesystem::path file);
  // A file the program writes as the next version of the input that `flag`
  // of an earlier reads() names; it may be that input, no other.
  PathsApart& writes_next(std::string flag, std::filesystem::path file, std::string continues);
  // The files the program writes into `folder` whose names it learns as it
  // runs, all matching `pattern` (fnmatch's '*', e.g. "attention_*.svg").
  PathsApart& writes_matching(std::string flag, std::filesystem::path folder, std::string pattern);

  // Throws UsageError naming both flags and the path for the first output
  // that is an input (other than the one it continues) or another output.
  void check() const;

 private:
  struct Use {
    std::string flag;
    std::filesystem::path path;  // a file; for writes_matching, the folder
    std::string pattern;         // "" for one file
    std::string continues;       // writes_next's input flag
  };
  std::vector<Use> inputs_;
  std::vector<Use> outputs_;
};

}  // namespace attograd::cli
