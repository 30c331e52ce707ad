// examples/common/interrupt.hpp — Ctrl-C and `kill` end a training run at a
// step boundary, with its files saved, never in the middle of a step or a write.
//
//   cli::InterruptGuard interrupts;              // SIGINT and SIGTERM now only set a flag
//   while (!done && !interrupts.stop_requested()) step();   // checked between steps
//   save();                                      // checkpoint and pictures, as one set
//   if (interrupts.requested()) return interrupts.exit_status();   // 130 or 143
//
// The handler does one async-signal-safe thing: it stores the signal number
// in a sig_atomic_t. A second SIGINT or SIGTERM before the guard is gone (a
// save that hangs, an impatient user) ends the program at once with
// _exit(128 + signal). That is safe for the last good files because every
// program writes them under temporary names and renames them into place only
// when whole (tensor/atomic_file.hpp, output_folder.hpp): an exit part way
// leaves a stale temporary, which the next run removes, and the old set.
// The destructor puts back the handlers that were there before. The handler
// and its flag belong to the process, so keep one guard at a time.
//
// Tests reach a given step deterministically through one environment
// variable read by the guard, ATTOGRAD_TEST_INTERRUPT="<INT|TERM>@<N>[,again]":
// the program raises that signal to itself at the step boundary after its
// N-th step (stop_requested counts them), and with ",again" raises it a
// second time inside the save that follows (during_save()), as a user who
// presses Ctrl-C twice would.
#pragma once

#include <cstdint>
#include <string>

namespace attograd::cli {

class InterruptGuard {
 public:
  // Installs the handler for SIGINT and SIGTERM and forgets earlier signals.
  InterruptGuard();
  // Restores the handlers that were installed before.
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

  // Called at each step boundary (before every step): whether a signal has
  // arrived, so the loop should stop here.
  bool stop_requested();
  // Whether a signal has arrived (does not count a step).
  bool requested() const;
  // SIGINT or SIGTERM, or 0 when none arrived.
  int signal() const;
  // 128 + signal(), what a shell reports for a program a signal ended:
  // 130 for SIGINT (Ctrl-C), 143 for SIGTERM (kill).
  int exit_status() const;
  // "SIGINT" or "SIGTERM", for the closing line.
  std::string what() const;

  // Called by a save between writing its temporaries and renaming them: the
  // test hook's second signal (",again"), which ends the program there.
  void during_save() const;

 private:
  int64_t boundaries_ = 0;  // stop_requested calls so far
};

}  // namespace attograd::cli
