// examples/common/output_folder.hpp — output folders that fail fast, and sets
// of files that are written whole.
//
// A program that trains for an hour must not find out at the end that it
// cannot write its results. So before any work it prepares each output
// folder: creates it, writes and removes a probe file, and tidies up what a
// killed run left behind:
//
//   prepare_output_folder("--out", flags.out);   // Error naming --out, the folder, the reason
//
// The files of one result (a checkpoint and its loss curve, the pictures of a
// run) belong together, so they are written to temporary names first and
// renamed only when all of them are done; a failure part way leaves the old
// set as it was:
//
//   OutputSet set(folder);
//   save_checkpoint(set.staged("checkpoint.safetensors"), …);
//   chart.save(set.staged("loss.svg"));
//   set.commit();                          // now both names hold the new files
//
// Temporary names follow the project's one pattern,
// "<name>.attograd-tmp.<pid>.<tag>" (tensor/atomic_file.hpp defines it and
// uses it too). A file whose whole name has that pattern and whose writer
// process no longer exists is stale: prepare_output_folder removes it. No
// other file is ever removed — a user's "thesis.tmp.2023.docx" stays.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace attograd::cli {

// Creates `folder` (with its parents) and checks that a file can be created
// in it, then removes stale temporary files there. Throws attograd::Error
// "<flag> '<folder>': cannot …: <reason>" otherwise; `flag` names where the
// folder came from ("--out").
void prepare_output_folder(const std::string& flag, const std::filesystem::path& folder);

// Removes the files in `folder` named "<name>.attograd-tmp.<pid>.<tag>"
// (temporary_file_writer in tensor/atomic_file.hpp) whose process
// <pid> has ended. Returns how many were removed; files it cannot remove are
// left (they are only clutter).
size_t remove_stale_temporaries(const std::filesystem::path& folder);

// Files written under temporary names and renamed together (see the top).
class OutputSet {
 public:
  explicit OutputSet(std::filesystem::path folder);
  OutputSet(const OutputSet&) = delete;
  OutputSet& operator=(const OutputSet&) = delete;
  // Removes the staged files that were not committed.
  ~OutputSet();

  // The temporary path to write `name` (a file name inside the folder) to.
  std::filesystem::path staged(const std::string& name);
  // Renames every staged file that exists onto its name. Throws Error naming
  // the file if a rename fails (the files not yet renamed are removed).
  void commit();

 private:
  std::filesystem::path folder_;
  std::vector<std::pair<std::filesystem::path, std::filesystem::path>> files_;  // staged, final
};

}  // namespace attograd::cli
